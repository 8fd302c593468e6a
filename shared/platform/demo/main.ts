// `npm run demo`: the design's three demo scenarios (section 6) against the local host, narrated step by step with
// what memory did. Every expected effect is checked on the API's answers; the exit code is 0 only when all held.
// It prints the demo's own conversation text, facts and summaries: that is what the demo is for (the service itself
// never logs memory text).
import { MemoryClient, type ContextResponse, type Fact, type Health } from '../../client/index.js';
import { DEFAULT_MEMORY_URL, findOrStartHost } from './host.js';
import { withProgress } from './progress.js';
import {
  ADVISOR_SESSIONS,
  answeringFact,
  budgetConversation,
  compression,
  GREETING,
  PAST_SESSIONS,
  RECALL_RANK,
  RECALLS,
  transcriptTokens,
  type Compression,
  type DemoTurn,
  type PastSession,
} from './scenarios.js';

/** Turns appended per step in scenario 3, so the context is shown before and after each compression. */
const COMPRESSION_STEP = 4;
/** User/assistant pairs of scenario 3's conversation: four K_TURN_BUFFER windows at the default K of 10. */
const COMPRESSION_EXCHANGES = 20;

const say = (line = '') => console.log(line);
const block = (title: string, text: string) => {
  say(`  ┌─ ${title}`);
  for (const line of text.split('\n')) say(`  │ ${line}`);
  say('  └─');
};
const quote = (text: string, max = 160) => JSON.stringify(text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** The checks of one run: each names its scenario and step; a failed one is reported at the end and fails the run. */
class Checks {
  readonly failed: string[] = [];
  passed = 0;
  scenario = '';
  /** The step under way, named in the failure when it throws. */
  step = '';

  check(step: string, ok: boolean, detail: string): boolean {
    if (ok) {
      this.passed++;
      say(`  ✓ ${step}: ${detail}`);
    } else {
      this.failed.push(`${this.scenario}, ${step}: ${detail}`);
      say(`  ✗ FAILED ${step}: ${detail}`);
    }
    return ok;
  }
}

async function main(): Promise<number> {
  const url = (process.env.MEMORY_URL ?? DEFAULT_MEMORY_URL).replace(/\/+$/, '');
  const host = await findOrStartHost(url, say);
  const stopHost = () => {
    say(`\nInterrupted${host.started ? ': stopping the local host' : ''}.`);
    void host.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', stopHost);
  process.once('SIGTERM', stopHost);
  try {
    const apiKey = process.env.MEMORY_API_KEY;
    const memory = new MemoryClient({ baseUrl: host.url, ...(apiKey && { auth: () => ({ apiKey }) }) });
    const health = await memory.health();
    say(`Agent Memory Service at ${host.url}${host.started ? ' (started by the demo)' : ''}: storage ${health.storage}, models ${health.models.chat} and ${health.models.embeddings}`);
    const demo = new Demo(memory, health.memory, `${Date.now().toString(36)}`);
    const checks = new Checks();
    const scenarios: [string, (checks: Checks) => Promise<void>][] = [
      ['Scenario 1: long context with memory retrieval from past sessions', (c) => demo.recall(c)],
      ['Scenario 2: reflection-powered session initialisation', (c) => demo.initialisation(c)],
      ['Scenario 3: real-time context compression', (c) => demo.compression(c)],
    ];
    for (const [title, run] of scenarios) {
      say();
      say(`━━ ${title} ━━`);
      checks.scenario = title.slice(0, title.indexOf(':'));
      checks.step = 'start';
      try {
        await run(checks);
      } catch (error) {
        checks.check(checks.step, false, `it failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
      }
    }
    say();
    if (checks.failed.length === 0) {
      say(`All ${checks.passed} checks passed: memory did what each scenario expects.`);
      return 0;
    }
    say(`${checks.failed.length} of ${checks.passed + checks.failed.length} checks FAILED:`);
    for (const failure of checks.failed) say(`  - ${failure}`);
    return 1;
  } finally {
    process.off('SIGINT', stopHost);
    process.off('SIGTERM', stopHost);
    await host.stop();
  }
}

/** The memory settings the service reports in /health: K, N and the recent sessions shown. */
type MemorySettings = Health['memory'];

class Demo {
  /** Each turn's seq, from the appends' answers (turn ids are unique across the demo's sessions). */
  readonly #seqs = new Map<string, number>();

  constructor(
    readonly memory: MemoryClient,
    readonly settings: MemorySettings,
    readonly runId: string,
  ) {}

  // ---- Scenario 1 ----

  async recall(checks: Checks): Promise<void> {
    const userId = `demo-recall-${this.runId}`;
    const turns = PAST_SESSIONS.reduce((n, s) => n + s.turns.length, 0);
    const raw = transcriptTokens(PAST_SESSIONS.flatMap((s) => s.turns));
    say(`User ${userId}: ${PAST_SESSIONS.length} past sessions, ${turns} turns (${raw} tokens of transcript), each ended.`);
    for (const session of PAST_SESSIONS) await this.pastSession(checks, userId, session);

    const sessionId = 'new-question';
    const question = RECALLS[0]!;
    say();
    say(`A new session ${sessionId} starts with the question ${quote(question.query)}.`);
    checks.step = `new session ${sessionId}`;
    await this.append(userId, sessionId, [{ role: 'user', content: question.query, turnId: `${sessionId}-u1` }]);
    await this.projected(userId, sessionId);

    const context = await this.memory.getContext(userId, sessionId);
    block(`context of ${sessionId}: ${context.tokens} tokens`, context.text);
    const expected = PAST_SESSIONS.slice(-this.settings.numRecentSessions).map((s) => s.sessionId);
    const shown = context.sections.recentSessions.map((s) => s.sessionId);
    checks.check(
      'recent sessions in the context',
      sameSet(shown, expected) && context.sections.recentSessions.every((s) => s.summary.length > 0),
      `summaries of ${shown.join(', ') || 'no session'} (expected the last ${this.settings.numRecentSessions}: ${expected.join(', ')})`,
    );
    checks.check('context smaller than the history', context.tokens < raw, `the context takes ${context.tokens} tokens, the ${turns} past turns ${raw}; the rest is a fact search away`);

    for (const recall of RECALLS) {
      checks.step = `recall "${recall.needle}"`;
      const { facts, tokens } = await this.memory.searchFacts(userId, { query: recall.query, topK: 5 });
      say();
      say(`Fact search ${quote(recall.query)}: ${facts.length} facts, ${tokens} tokens`);
      facts.forEach((fact, i) => say(`  #${i + 1} ${describeFact(fact)}`));
      const said = PAST_SESSIONS.find((s) => s.sessionId === recall.sessionId)?.turns ?? [];
      const found = answeringFact(facts, recall, said, (id) => this.#seqs.get(id));
      const turn = found && said.find((t) => t.turnId === found.turnId);
      checks.check(
        `recall "${recall.needle}"`,
        found !== undefined && found.rank <= RECALL_RANK,
        found
          ? `fact #${found.rank} (the top ${RECALL_RANK} expected) says "${recall.needle}" and points at the turn that said it: session ${recall.sessionId}, ` +
              `turn ${found.turnId} (seq ${this.#seqs.get(found.turnId)}), ${turn && context.text.includes(turn.content) ? 'also in the context above' : 'not in the context above: retrieval brought it back'}`
          : `no fact among the ${facts.length} found says "${recall.needle}" with provenance in session ${recall.sessionId} at a turn that said it`,
      );
    }
  }

  // ---- Scenario 2 ----

  async initialisation(checks: Checks): Promise<void> {
    const userId = `demo-init-${this.runId}`;
    say(`User ${userId}: ${ADVISOR_SESSIONS.length} sessions with an advisor, each ended: summary and insights.`);
    let insightCount = 0;
    for (const session of ADVISOR_SESSIONS) {
      await this.pastSession(checks, userId, session);
      const { insights } = await this.memory.listInsights(userId, { sessionId: session.sessionId });
      for (const insight of insights) say(`    insight [${insight.category}, confidence ${insight.confidence.toFixed(2)}, ${insight.importance}] ${quote(insight.text)}`);
      insightCount += insights.length;
    }
    checks.check('session reflection', insightCount > 0, `${insightCount} insights from ${ADVISOR_SESSIONS.length} sessions`);

    say();
    say('Long-term reflection (POST /reflection; nightly in production): the pending insights become the profile.');
    checks.step = 'long-term reflection';
    const { operationId } = await this.memory.startReflection(userId);
    const reflection = await this.operation(operationId);
    const output = JSON.stringify(reflection.output ?? reflection.error ?? null);
    checks.check('long-term reflection', reflection.status === 'completed', `operation ${operationId} ${reflection.status}: ${output}`);
    checks.step = 'profile built from the insights';
    const profile = await this.memory.getProfile(userId);
    block(`profile v${profile.version}, from ${profile.sourceInsightIds.length} insights`, profile.profile);
    const { insights: processed } = await this.memory.listInsights(userId, { status: 'processed' });
    checks.check(
      'profile built from the insights',
      profile.profile.trim().length > 0 && profile.sourceInsightIds.length > 0 && processed.length > 0,
      `profile of ${profile.profile.length} characters from ${profile.sourceInsightIds.length} insights; ${processed.length} insights now processed`,
    );

    const sessionId = 'welcome-back';
    say();
    say(`A new session ${sessionId} starts with ${quote(GREETING.content)}: nothing in it about the user.`);
    checks.step = `new session ${sessionId}`;
    await this.append(userId, sessionId, [GREETING]);
    await this.projected(userId, sessionId);
    const context = await this.memory.getContext(userId, sessionId);
    block(`context of ${sessionId}: ${context.tokens} tokens`, context.text);
    checks.check(
      'profile in the new context',
      context.sections.profile === profile.profile && context.text.includes(profile.profile),
      context.sections.profile === null ? 'the context has no profile' : `the context starts with profile v${profile.version}`,
    );
    const expected = ADVISOR_SESSIONS.slice(-this.settings.numRecentSessions).map((s) => s.sessionId);
    const shown = context.sections.recentSessions.map((s) => s.sessionId);
    checks.check(
      'recent session summaries in the new context',
      sameSet(shown, expected) && context.sections.recentSessions.every((s) => s.summary.length > 0 && context.text.includes(s.summary)),
      `summaries of ${shown.join(', ') || 'no session'} (expected ${expected.join(', ')})`,
    );
    const last = context.sections.recentSessions.find((s) => s.sessionId === ADVISOR_SESSIONS.at(-1)!.sessionId);
    if (last) say(`  An agent can open with: "Welcome back! Last time: ${last.summary}"`);
  }

  // ---- Scenario 3 ----

  async compression(checks: Checks): Promise<void> {
    const userId = `demo-compress-${this.runId}`;
    const sessionId = 'budget-review';
    const { kTurnBuffer: k, nActiveTurns: n } = this.settings;
    const conversation = budgetConversation(sessionId, COMPRESSION_EXCHANGES);
    say(`User ${userId}, session ${sessionId}: ${conversation.length} turns, ${COMPRESSION_STEP} at a time. Every ${k} turns (K_TURN_BUFFER) become an interaction`);
    say(`and the summary grows; at least ${n} turns (N_ACTIVE_TURNS) stay verbatim.`);
    let before: { context: ContextResponse; turns: number } | undefined;
    let last: { context: ContextResponse; state: Compression } | undefined;
    let badSteps = 0;
    for (let appended = 0; appended < conversation.length; ) {
      const batch = conversation.slice(appended, appended + COMPRESSION_STEP);
      checks.step = `context after ${appended + batch.length} turns`;
      await this.append(userId, sessionId, batch);
      appended += batch.length;
      await this.projected(userId, sessionId);
      const context = await this.memory.getContext(userId, sessionId);
      const state = compression(context, conversation.slice(0, appended), this.#seqs, n);
      const windows = Math.floor(appended / k);
      say(
        `  ${String(appended).padStart(3)} turns: transcript ${String(state.rawTokens).padStart(5)} tokens → context ${String(state.contextTokens).padStart(4)} tokens ` +
          `(${state.summarised} summarised, ${state.verbatim} verbatim, summary through seq ${context.summaryCoversThroughSeq})`,
      );
      const ok =
        state.missing.length === 0 &&
        state.lastVerbatim &&
        state.verbatim >= Math.min(n, appended) &&
        state.covered === windows * k;
      if (!ok) {
        badSteps++;
        checks.check(
          `context after ${appended} turns`,
          false,
          `expected ${windows * k} turns covered by the summary (${windows} full windows of ${k}), the last ${Math.min(n, appended)} verbatim and none missing; ` +
            `got ${state.covered} covered, last verbatim ${state.lastVerbatim}, missing ${state.missing.join(', ') || 'none'}`,
        );
      }
      if (windows === 0) before = { context, turns: appended };
      last = { context, state };
    }
    if (!last) return;
    const steps = Math.ceil(conversation.length / COMPRESSION_STEP);
    checks.check(
      'every step of the conversation',
      badSteps === 0,
      badSteps === 0 ? `after each of ${steps} appends every turn was summarised or verbatim, full windows summarised, the last ${n} verbatim` : `${badSteps} of ${steps} steps failed (above)`,
    );
    say();
    if (before) block(`context before compression (${before.turns} turns, all verbatim): ${before.context.tokens} tokens`, before.context.text);
    block(`context after ${conversation.length} turns: ${last.context.tokens} tokens`, last.context.text);
    checks.check(
      'older turns summarised',
      last.context.sections.summary.length > 0 && last.state.summarised > 0 && before?.context.summaryCoversThroughSeq === 0,
      `before the first window filled the summary was empty; now it stands for ${last.state.summarised} turns and ${last.state.verbatim} are verbatim`,
    );
    const tail = conversation.slice(-n).map((t) => t.turnId);
    checks.check('last turns verbatim', last.state.lastVerbatim, `the context ends with the last ${n} turns (${tail[0]} … ${tail.at(-1)})`);
    checks.check(
      'context much smaller than the transcript',
      last.state.contextTokens * 2 <= last.state.rawTokens,
      `${last.state.contextTokens} tokens instead of ${last.state.rawTokens} (${Math.round((100 * last.state.contextTokens) / last.state.rawTokens)}%)`,
    );
  }

  // ---- shared steps ----

  /** Appends a session's turns, ends it and waits for the session-end operation (summary, insights). */
  async pastSession(checks: Checks, userId: string, session: PastSession): Promise<void> {
    checks.step = `session ${session.sessionId} ended`;
    await this.append(userId, session.sessionId, session.turns);
    const { operationId } = await this.memory.endSession(userId, session.sessionId);
    const done = await this.operation(operationId);
    const status = await this.memory.getSession(userId, session.sessionId);
    checks.check(
      `session ${session.sessionId} ended`,
      done.status === 'completed' && status.status === 'completed' && status.summary.length > 0,
      `${session.turns.length} turns; operation ${done.status}, reflection ${status.reflectionStatus}; summary ${quote(status.summary)}`,
    );
  }

  async append(userId: string, sessionId: string, turns: readonly DemoTurn[]): Promise<void> {
    const { accepted } = await this.memory.appendTurns(userId, sessionId, turns);
    for (const { turnId, seq } of accepted) this.#seqs.set(turnId, seq);
  }

  operation(operationId: string) {
    return withProgress(`waiting for ${operationId}`, this.memory.waitForOperation(operationId, { intervalMs: 200, maxPolls: 1500 }));
  }

  /** Waits until the session's projection has caught up (summaries of full windows included); shown past a second. */
  projected(userId: string, sessionId: string): Promise<void> {
    const poll = async () => {
      for (let i = 0; i < 1500; i++) {
        if ((await this.memory.getSession(userId, sessionId)).pending === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`session ${sessionId} was still not projected after 150 s`);
    };
    return withProgress(`projecting ${sessionId}`, poll(), { after: 1000 });
  }
}

function describeFact(fact: Fact): string {
  const where = [
    `session ${fact.sessionId ?? '-'}`,
    fact.seqRange ? `seq ${fact.seqRange[0]}-${fact.seqRange[1]}` : undefined,
    fact.turnIds.length > 0 ? `turns ${fact.turnIds.length > 3 ? `${fact.turnIds[0]} … ${fact.turnIds.at(-1)} (${fact.turnIds.length})` : fact.turnIds.join(', ')}` : undefined,
  ].filter(Boolean);
  return `score ${fact.score.toFixed(2)} ${fact.source.padEnd(16)} ${where.join(', ')}: ${quote(fact.text, 120)}`;
}

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && b.every((x) => a.includes(x));

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`The demo could not run: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
