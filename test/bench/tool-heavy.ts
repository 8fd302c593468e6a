/**
 * Tool-heavy session (issue 6, "Show"): 30 tool outputs of 2k–20k tokens (JSON, logs, HTML, code, prose), each after
 * an assistant tool call, the session ending with the assistant's answer. Context tokens with offload vs. the same
 * session appended without offload (no projection in either, so every turn is in the verbatim part of both), plus the
 * first-use context (the last output not yet answered, so shown in full), and a check that every output comes back
 * byte for byte. Runs on an in-memory PGlite and an in-memory Azurite; `npx tsx test/bench/tool-heavy.ts` runs it alone.
 */
import { pathToFileURL } from 'node:url';
import { azuriteConnectionString } from '../../shared/adapters/blob/azure-blob.js';
import { appendTurns } from '../../shared/application/append-turns.js';
import { retrieveMemory } from '../../shared/application/artifacts.js';
import { getContext } from '../../shared/application/get-context.js';
import { turnArtifactKey } from '../../shared/application/offload.js';
import { countTokens } from '../../shared/domain/tokens.js';
import { createRuntime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';
import { startAzurite } from '../../shared/platform/local-host/azurite.js';

const OUTPUTS = 30;

/** Deterministic pseudo-random numbers (mulberry32). */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const UNITS: ((i: number) => string)[] = [
  (i) => `{"id":${i},"sku":"SKU-${(i * 7919) % 100000}","name":"Item ${i}","price":${(i * 37) % 1000}.99,"tags":["a${i % 7}","b${i % 5}"],"inStock":${i % 3 !== 0}},`,
  (i) => `2026-01-05T10:${String(i % 60).padStart(2, '0')}:00Z ${i % 17 === 0 ? 'ERROR request failed with status 503' : 'INFO GET /api/items/' + i + ' 200 12ms'}\n`,
  (i) => `<div class="result"><h2>Result ${i}</h2><p>Paragraph ${i} about pension contributions and index funds, fees ${i % 9} basis points.</p></div>\n`,
  (i) => `export function handler${i}(input: Input${i % 5}): Output {\n  const value = compute(input.field${i % 3}, ${i});\n  return { ok: value > ${i % 100} };\n}\n`,
  (i) => `Section ${i}. The committee reviewed the quarterly figures and noted that item ${i} exceeded its forecast by ${i % 13} percent. `,
];

/** A tool output of about `tokens` tokens in the given style. */
function toolOutput(kind: number, tokens: number): string {
  const unit = UNITS[kind]!;
  const perUnit = countTokens(unit(1));
  const count = Math.ceil(tokens / perUnit);
  const body = Array.from({ length: count }, (_, i) => unit(i)).join('');
  if (kind === 0) return `{"results":[${body.slice(0, -1)}],"count":${count}}`;
  if (kind === 2) return `<!doctype html><html><head><title>Search results</title></head><body><h1>Results</h1>${body}</body></html>`;
  return body;
}

export async function benchToolHeavy(): Promise<Record<string, number>> {
  const azurite = await startAzurite({});
  const runtime = await createRuntime(loadSettings({ MEMORY_DATA_DIR: 'memory://', ARTIFACTS_BLOB_CONNECTION_STRING: azuriteConnectionString(azurite.blobEndpoint) }));
  try {
    const rand = random(6);
    const outputs = Array.from({ length: OUTPUTS }, (_, i) => toolOutput(i % UNITS.length, 2000 + Math.floor(rand() * 18_001)));
    const turns = [
      { role: 'user' as const, content: 'Research our product catalogue, the service logs and the docs, then summarise the issues.', turnId: 'u-0' },
      ...outputs.flatMap((content, i) => [
        { role: 'assistant' as const, content: `Calling tool ${i + 1}.`, turnId: `a-${i}`, toolCalls: [{ id: `call-${i}`, type: 'function' as const, function: { name: `tool_${i % UNITS.length}`, arguments: '{}' } }] },
        { role: 'tool' as const, content, turnId: `t-${i}`, name: `tool_${i % UNITS.length}`, toolCallId: `call-${i}` },
      ]),
    ];
    const answer = { role: 'assistant' as const, content: 'Here is the summary of the issues I found.', turnId: 'a-final' };

    const withOffload = { userId: 'bench-tool-heavy', sessionId: 'offload' };
    const without = { userId: 'bench-tool-heavy', sessionId: 'no-offload' };
    const startAppend = performance.now();
    for (let i = 0; i < turns.length; i += 10) await appendTurns(runtime, withOffload, { turns: turns.slice(i, i + 10) });
    const appendMs = performance.now() - startAppend;
    const firstUse = await getContext(runtime, withOffload, {});
    await appendTurns(runtime, withOffload, { turns: [answer] });
    // The same runtime without detail memory: appendTurns then records every turn as it came.
    const noOffloadDeps = { ...runtime, detail: undefined };
    for (let i = 0; i < turns.length; i += 10) await appendTurns(noOffloadDeps, without, { turns: [...turns.slice(i, i + 10)] });
    await appendTurns(noOffloadDeps, without, { turns: [answer] });

    const startContext = performance.now();
    const offloaded = await getContext(runtime, withOffload, {});
    const contextMs = performance.now() - startContext;
    const baseline = await getContext(noOffloadDeps, without, {});

    let retrievable = 0;
    const startRetrieve = performance.now();
    for (let i = 0; i < OUTPUTS; i++) {
      const back = await retrieveMemory(runtime, { userId: withOffload.userId }, turnArtifactKey(withOffload, `t-${i}`), { transform: 'full' });
      if (back.content === outputs[i]) retrievable++;
    }
    const retrieveMs = performance.now() - startRetrieve;
    const outputTokens = outputs.reduce((sum, o) => sum + countTokens(o), 0);
    const round1 = (x: number) => Math.round(x * 10) / 10;
    return {
      toolOutputs: OUTPUTS,
      toolOutputTokens: outputTokens,
      contextTokensWithoutOffload: baseline.tokens,
      contextTokensWithOffload: offloaded.tokens,
      reductionPct: round1(100 * (1 - offloaded.tokens / baseline.tokens)),
      contextTokensFirstUse: firstUse.tokens,
      reductionFirstUsePct: round1(100 * (1 - firstUse.tokens / baseline.tokens)),
      memoryRefsInContext: offloaded.memoryRefs.length,
      retrievableInFull: retrievable,
      appendMsPer10Turns: round1(appendMs / Math.ceil(turns.length / 10)),
      contextBuildMs: round1(contextMs),
      retrieveFullMsPerOutput: round1(retrieveMs / OUTPUTS),
    };
  } finally {
    await runtime.close();
    await azurite.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchToolHeavy(), null, 2));
}
