import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as appendHandler } from '../../../functions/http-turns-append.js';
import { handler as contextHandler } from '../../../functions/http-context-get.js';
import { handler as createHandler } from '../../../functions/http-memories-create.js';
import { handler as listHandler } from '../../../functions/http-memories-list.js';
import { handler as getHandler } from '../../../functions/http-memory-get.js';
import { handler as deleteHandler } from '../../../functions/http-memory-delete.js';
import { handler as snapshotHandler } from '../../../functions/http-snapshots-create.js';
import { handler as factsHandler } from '../../../functions/http-facts-search.js';
import retentionActivity from '../../../functions/activity-retention-apply.js';
import { handler as restoreHandler } from '../../../functions/http-snapshot-restore.js';
import { azuriteConnectionString } from '../../../shared/adapters/blob/azure-blob.js';
import { turnArtifactKey } from '../../../shared/application/offload.js';
import type { ContextResponse } from '../../../shared/contracts/context.js';
import { isTurn } from '../../../shared/contracts/events.js';
import { DAY_SECONDS } from '../../../shared/domain/retention.js';
import { countTokens } from '../../../shared/domain/tokens.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { startAzurite, type RunningAzurite } from '../../../shared/platform/local-host/azurite.js';
import { atOffset, context, json, memoryRuntime, request } from '../../support/runtime.js';

const MAX_BYTES = 300_000;
let runtime: Runtime;
let azurite: RunningAzurite;
beforeAll(async () => {
  azurite = await startAzurite({});
  runtime = await memoryRuntime({
    ARTIFACTS_BLOB_CONNECTION_STRING: azuriteConnectionString(azurite.blobEndpoint),
    ARTIFACTS_CONTAINER: 'artifacts-test',
    ARTIFACT_MAX_BYTES: String(MAX_BYTES),
    ARTIFACT_INLINE_MAX_BYTES: '4096',
  });
}, 60_000);
afterAll(async () => {
  await runtime?.close();
  await azurite?.stop();
});

let n = 0;
const fresh = () => ({ userId: `mem-user-${++n}`, sessionId: 'sess-1' });

/** A text of exactly `tokens` tokens (o200k_base). */
function textOf(tokens: number): string {
  let text = `alpha${' beta'.repeat(tokens - 1)}`;
  while (countTokens(text) > tokens) text = text.slice(0, text.lastIndexOf(' '));
  while (countTokens(text) < tokens) text += ' beta';
  if (countTokens(text) !== tokens) throw new Error(`cannot build ${tokens} tokens`);
  return text;
}

const append = (key: { userId: string; sessionId: string }, turns: object[]) =>
  appendHandler(request('POST', `v1/users/${key.userId}/sessions/${key.sessionId}/turns`, { params: key, body: { turns } }), context('http-turns-append'));
const getContext = async (key: { userId: string; sessionId: string }, query = '') =>
  json(await contextHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}/context${query}`, { params: key }), context('http-context-get'))) as unknown as ContextResponse;
const get = (userId: string, key: string, query = '') => getHandler(request('GET', `v1/users/${userId}/memories/${key}${query}`, { params: { userId, key } }), context('http-memory-get'));
const create = (userId: string, body: object | string) => createHandler(request('POST', `v1/users/${userId}/memories`, { params: { userId }, body }), context('http-memories-create'));
const list = (userId: string, query = '') => listHandler(request('GET', `v1/users/${userId}/memories${query}`, { params: { userId } }), context('http-memories-list'));
const del = (userId: string, key: string) => deleteHandler(request('DELETE', `v1/users/${userId}/memories/${key}`, { params: { userId, key } }), context('http-memory-delete'));

describe('offload at append', () => {
  it('offloads a turn of threshold + 1 tokens and keeps turns of threshold and threshold - 1 tokens verbatim', async () => {
    const key = fresh();
    const [below, at, above] = [textOf(499), textOf(500), textOf(501)];
    const res = await append(key, [
      { role: 'tool', content: below, turnId: 'below', name: 'shell' },
      { role: 'tool', content: at, turnId: 'at', name: 'shell' },
      { role: 'tool', content: above, turnId: 'above', name: 'shell' },
    ]);
    expect(res.status).toBe(202);
    const events = (await runtime.events.read(key, 0)).filter(isTurn);
    expect(events.map((e) => e.data.content)).toEqual([below, at, expect.stringMatching(/^\[MemoryRef: turn-[0-9a-f]{24} - shell: Text, 501 words: alpha beta.* - 501 tokens\]$/)]);
    expect(events[0]!.data.memoryRef).toBeUndefined();
    expect(events[1]!.data.memoryRef).toBeUndefined();
    expect(events[2]!.data.memoryRef).toEqual({ key: turnArtifactKey(key, 'above'), description: expect.any(String), tokens: 501, bytes: Buffer.byteLength(above) });

    const full = await get(key.userId, turnArtifactKey(key, 'above'));
    expect(json(full)).toMatchObject({ content: above, tokens: 501, type: 'tool_output', source: 'shell', sessionId: key.sessionId, turnId: 'above', storage: 'inline' });
  });

  it('a retried append with the same turnId creates one artifact and returns the original seq', async () => {
    const key = fresh();
    const turn = { role: 'tool', content: textOf(800), turnId: 'r1' };
    const first = json(await append(key, [turn]));
    const second = json(await append(key, [turn]));
    expect(second.accepted).toEqual(first.accepted);
    expect((json(await list(key.userId, `?sessionId=${key.sessionId}`)).items as unknown[]).length).toBe(1);
  });

  it('puts a large turn in Blob Storage and loses nothing', async () => {
    const key = fresh();
    const content = JSON.stringify({ rows: Array.from({ length: 3000 }, (_, i) => ({ id: i, city: 'Zürich', note: `row ${i}` })) });
    await append(key, [{ role: 'tool', content, turnId: 'big', name: 'sql' }]);
    const body = json(await get(key.userId, turnArtifactKey(key, 'big')));
    expect(body).toMatchObject({ storage: 'blob', contentKind: 'json', description: expect.stringContaining('rows: array(3000) of object{id, city, note}') });
    expect(body.content).toBe(content);
  });
});

describe('placeholders in the context', () => {
  it('shows the latest unanswered tool output in full once, then only its reference', async () => {
    const key = fresh();
    const first = textOf(1200);
    const second = `${textOf(900)} gamma`;
    await append(key, [
      { role: 'user', content: 'fetch the report', turnId: 'u1' },
      { role: 'tool', content: first, turnId: 'tool1', name: 'fetch' },
    ]);
    const firstUse = await getContext(key);
    expect(firstUse.text).toContain(first);
    expect(firstUse.memoryRefs).toEqual([]);

    await append(key, [{ role: 'assistant', content: 'I read it.', turnId: 'a1' }]);
    const later = await getContext(key);
    const ref1 = turnArtifactKey(key, 'tool1');
    expect(later.text).not.toContain(first);
    expect(later.text).toMatch(new RegExp(`\\[MemoryRef: ${ref1} - fetch: Text, 1200 words: alpha beta.* - 1200 tokens\\]`));
    expect(later.memoryRefs).toEqual([{ key: ref1, tokens: 1200, description: expect.any(String), seq: 2, turnId: 'tool1' }]);
    expect(later.tokens).toBeLessThan(200);

    await append(key, [{ role: 'tool', content: second, turnId: 'tool2', name: 'fetch' }]);
    const next = await getContext(key);
    expect(next.text).toContain(second);
    expect(next.text).not.toContain(first);
    expect(next.memoryRefs.map((r) => r.key)).toEqual([ref1]);
  });

  it('falls back to the placeholder when the full output does not fit maxTokens', async () => {
    const key = fresh();
    await append(key, [{ role: 'tool', content: textOf(3000), turnId: 't', name: 'fetch' }]);
    const ctx = await getContext(key, '?maxTokens=500');
    expect(ctx.tokens).toBeLessThanOrEqual(500);
    expect(ctx.memoryRefs.map((r) => r.turnId)).toEqual(['t']);
  });
});

describe('artifacts API', () => {
  const log = Array.from({ length: 40 }, (_, i) => `2026-01-05 10:00:${String(i).padStart(2, '0')} ${i % 8 === 7 ? 'ERROR timeout' : 'INFO ok'} ${i}`).join('\n');

  it('stores with 201 and retrieves with every transform', async () => {
    const userId = fresh().userId;
    const res = await create(userId, { content: log, type: 'command_output', source: 'npm', tags: ['ci'] });
    expect(res.status).toBe(201);
    const stored = json(res);
    expect(stored).toMatchObject({ type: 'command_output', source: 'npm', tags: ['ci'], contentKind: 'log', storage: 'inline', description: expect.stringMatching(/^npm: Log of 40 lines, 5 error lines/) });
    const k = stored.key as string;
    const view = async (q: string) => json(await get(userId, k, q));
    expect((await view('')).content).toBe(log);
    expect((await view('?transform=full')).content).toBe(log);
    expect((await view('?transform=first_n&n=2')).content).toBe(log.split('\n').slice(0, 2).join('\n'));
    expect((await view('?transform=last_n&n=1')).content).toBe(log.split('\n').at(-1));
    expect((await view('?transform=filtered&pattern=error')).lines).toEqual({ kept: 5, total: 40 });
    expect((await view('?transform=excerpt&n=30')).content).toMatch(/^2026-01-05 10:00:00 INFO ok…$/);
    expect((await view('?transform=summary')).content).toMatch(/^Log of 40 lines.*\nError lines:\n/s);
  });

  it('describes for the goal when one is given (goal-aware compaction through the chat model)', async () => {
    const userId = fresh().userId;
    const res = json(await create(userId, { content: log, goal: 'find the timeout errors' }));
    expect(res.description).toMatch(/^Log of 40 lines, 5 error lines.*; relevant: 2026-01-05 10:00:07 ERROR timeout 7$/);
    expect(json(await create(userId, { content: log, goal: 'x', description: 'mine' })).description).toBe('mine');
  });

  it('stores JSON values as pretty JSON and honours a given key idempotently', async () => {
    const userId = fresh().userId;
    const first = await create(userId, { key: 'prefs', content: { theme: 'dark' } });
    const again = await create(userId, { key: 'prefs', content: { theme: 'dark' } });
    expect(json(again)).toEqual(json(first));
    expect(json(first)).toMatchObject({ key: 'prefs', contentKind: 'json', type: 'custom' });
    const conflict = await create(userId, { key: 'prefs', content: { theme: 'light' } });
    expect(conflict.status).toBe(409);
    expect(json(await get(userId, 'prefs')).content).toBe('{\n  "theme": "dark"\n}');
  });

  it.each([
    ['an unknown transform', '?transform=everything', 'query.transform'],
    ['n = 0', '?transform=first_n&n=0', 'query.n'],
    ['a non-numeric n', '?transform=last_n&n=ten', 'query.n'],
    ['filtered without a pattern', '?transform=filtered', 'query.pattern'],
    ['an invalid pattern', '?transform=filtered&pattern=(', 'query.pattern'],
  ])('answers 400 for %s', async (_name, query, path) => {
    const userId = fresh().userId;
    const k = json(await create(userId, { content: 'some text' })).key as string;
    const res = await get(userId, k, query);
    expect(res.status).toBe(400);
    expect(json(res).errors).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  });

  it('answers 404 for an unknown key, and for another user asking for an existing key', async () => {
    const alice = fresh().userId;
    const bob = fresh().userId;
    const k = json(await create(alice, { content: 'alice only' })).key as string;
    expect((await get(alice, 'nope')).status).toBe(404);
    expect(json(await get(alice, 'nope')).code).toBe('not_found');
    expect((await get(bob, k)).status).toBe(404);
    expect((await del(bob, k)).status).toBe(404);
    expect(json(await list(bob)).items).toEqual([]);
    expect((await get(alice, k)).status).toBe(200);
  });

  it('answers 413 for a content over ARTIFACT_MAX_BYTES, and 400 for bad bodies', async () => {
    const userId = fresh().userId;
    const over = await create(userId, { content: 'x'.repeat(MAX_BYTES + 1) });
    expect(over.status).toBe(413);
    expect(json(over).code).toBe('payload_too_large');
    expect((await create(userId, { content: 'x'.repeat(MAX_BYTES) })).status).toBe(201);
    expect((await create(userId, { content: '' })).status).toBe(400);
    expect((await create(userId, { content: 'x', colour: 'red' })).status).toBe(400);
    expect((await create(userId, { content: 'x', key: 'bad key' })).status).toBe(400);
  });

  it('lists with filters and pages through everything with the cursor', async () => {
    const userId = fresh().userId;
    for (let i = 0; i < 5; i++) await create(userId, { content: `item ${i}`, type: i % 2 ? 'web_content' : 'note', tags: i < 2 ? ['a'] : ['b'], sessionId: 's1' });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = json(await list(userId, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`));
      seen.push(...(page.items as { key: string }[]).map((i) => i.key));
      cursor = page.nextCursor as string | null;
    } while (cursor);
    expect(new Set(seen).size).toBe(5);
    expect((json(await list(userId, '?type=web_content')).items as unknown[]).length).toBe(2);
    expect((json(await list(userId, '?tags=a')).items as unknown[]).length).toBe(2);
    expect((json(await list(userId, '?sessionId=s1&type=note&tags=b')).items as unknown[]).length).toBe(2);
    expect((await list(userId, '?cursor=garbage')).status).toBe(400);
    expect((await list(userId, '?limit=0')).status).toBe(400);
    expect((await list(userId, '?from=2030-01-01T00:00:00Z&to=2020-01-01T00:00:00Z')).status).toBe(400);
  });

  it('deletes: 200, then 404', async () => {
    const userId = fresh().userId;
    const k = json(await create(userId, { content: 'temporary' })).key as string;
    expect(json(await del(userId, k))).toEqual({ key: k, deleted: true });
    expect((await get(userId, k)).status).toBe(404);
    expect((await del(userId, k)).status).toBe(404);
  });
});

describe('snapshot / restore', () => {
  const snapshot = (userId: string, body: object) => snapshotHandler(request('POST', `v1/users/${userId}/snapshots`, { params: { userId }, body }), context('http-snapshots-create'));
  const restore = (userId: string, snapshotId: string, body: object) =>
    restoreHandler(request('POST', `v1/users/${userId}/snapshots/${snapshotId}/restore`, { params: { userId, snapshotId }, body }), context('http-snapshot-restore'));

  it("hands chosen artifacts to a sub-agent's view; restoring twice is harmless", async () => {
    const userId = fresh().userId;
    const a = json(await create(userId, { content: 'finding A', agentId: 'planner' })).key as string;
    const b = json(await create(userId, { content: 'x'.repeat(10_000), agentId: 'planner' })).key as string;
    await create(userId, { content: 'not shared', agentId: 'planner' });
    const snap = await snapshot(userId, { keys: [a, b], agentId: 'researcher' });
    expect(snap.status).toBe(201);
    const snapshotId = json(snap).snapshotId as string;

    const restored = json(await restore(userId, snapshotId, { agentId: 'researcher' }));
    expect(restored).toMatchObject({ snapshotId, agentId: 'researcher', missing: [] });
    const again = json(await restore(userId, snapshotId, { agentId: 'researcher' }));
    expect(again.restored).toEqual(restored.restored);

    const view = json(await list(userId, '?agentId=researcher&scope=private')).items as { key: string; restoredFrom: { key: string } }[];
    expect(view.map((v) => v.restoredFrom.key).sort()).toEqual([a, b].sort());
    const copyOfB = view.find((v) => v.restoredFrom.key === b)!;
    expect(json(await get(userId, copyOfB.key)).content).toBe('x'.repeat(10_000));
  });

  it('404 for unknown keys, an unknown snapshot, or another user', async () => {
    const userId = fresh().userId;
    expect((await snapshot(userId, { keys: ['nope'] })).status).toBe(404);
    expect((await restore(userId, 'snap-nope', { agentId: 'x' })).status).toBe(404);
    const k = json(await create(userId, { content: 'mine' })).key as string;
    const snapshotId = json(await snapshot(userId, { keys: [k] })).snapshotId as string;
    expect((await restore(fresh().userId, snapshotId, { agentId: 'x' })).status).toBe(404);
  });
});

describe('TTL classes', () => {
  const plus = (iso: unknown, seconds: number) => new Date(Date.parse(iso as string) + seconds * 1000).toISOString();

  it('records expiresAt from ttlClass or ttlSeconds, and null (permanent) by default', async () => {
    const userId = fresh().userId;
    const cases = [
      [{ ttlClass: 'working' }, 30 * 60],
      [{ ttlClass: 'session' }, 2 * 3600],
      [{ ttlClass: 'episodic' }, 7 * DAY_SECONDS],
      [{ ttlSeconds: 90 }, 90],
    ] as const;
    for (const [ttl, seconds] of cases) {
      const res = await create(userId, { content: 'remember for a while', ...ttl });
      expect(res.status).toBe(201);
      const body = json(res);
      expect(body.expiresAt).toBe(plus(body.createdAt, seconds));
      expect(json(await get(userId, body.key as string)).expiresAt).toBe(body.expiresAt);
    }
    expect(json(await create(userId, { content: 'keep it', ttlClass: 'semantic' })).expiresAt).toBeNull();
    expect(json(await create(userId, { content: 'keep it too' })).expiresAt).toBeNull();
    const listed = json(await list(userId)).items as { expiresAt: string | null }[];
    expect(listed.filter((i) => i.expiresAt === null)).toHaveLength(2);
  });

  it.each([
    ['ttlClass and ttlSeconds together', { ttlClass: 'working', ttlSeconds: 600 }, 'body.ttlSeconds'],
    ['an unknown class', { ttlClass: 'forever' }, 'body.ttlClass'],
    ['ttlSeconds under a minute', { ttlSeconds: 59 }, 'body.ttlSeconds'],
    ['ttlSeconds over a year', { ttlSeconds: 365 * DAY_SECONDS + 1 }, 'body.ttlSeconds'],
    ['fractional ttlSeconds', { ttlSeconds: 90.5 }, 'body.ttlSeconds'],
    ['ttlSeconds as a string', { ttlSeconds: '600' }, 'body.ttlSeconds'],
  ])('answers 400 validation_failed for %s, storing nothing', async (_name, ttl, path) => {
    const userId = fresh().userId;
    const res = await create(userId, { content: 'x', ...ttl });
    expect(res.status).toBe(400);
    expect(res.headers).toMatchObject({ 'content-type': 'application/problem+json' });
    expect(json(res)).toMatchObject({ code: 'validation_failed', errors: expect.arrayContaining([expect.objectContaining({ path })]) });
    expect(json(await list(userId)).items).toEqual([]);
  });

  it('an expired memory is gone at once: 404 not_found like an unknown key, absent from the listing, not deletable', async () => {
    const userId = fresh().userId;
    const k = json(await create(userId, { content: 'short-lived', ttlSeconds: 60 })).key as string;
    const kept = json(await create(userId, { content: 'long-lived' })).key as string;
    expect((await atOffset(runtime, 59, () => get(userId, k))).status).toBe(200);
    const expired = await atOffset(runtime, 61, () => get(userId, k));
    expect(expired.status).toBe(404);
    expect(json(expired)).toMatchObject({ code: 'not_found', status: 404 });
    expect(json(expired).code).toBe(json(await get(userId, 'never-stored')).code);
    expect((json(await atOffset(runtime, 61, () => list(userId))).items as { key: string }[]).map((i) => i.key)).toEqual([kept]);
    expect((await atOffset(runtime, 61, () => del(userId, k))).status).toBe(404);
  });

  it('fact search skips expired memories', async () => {
    const userId = fresh().userId;
    // Stored two hours ago as working memory (30 min): expired now. Fact search reads the current time.
    await atOffset(runtime, -2 * 3600, () => create(userId, { key: 'stale-plan', content: 'the zeppelin itinerary for Friday', ttlClass: 'working' }));
    await create(userId, { key: 'fresh-plan', content: 'the zeppelin itinerary for Saturday', ttlClass: 'working' });
    const res = await factsHandler(request('POST', `v1/users/${userId}/facts/search`, { params: { userId }, body: { query: 'zeppelin itinerary', sources: ['artifacts'] } }), context('http-facts-search'));
    expect(res.status).toBe(200);
    expect((json(res).facts as { memoryKey?: string }[]).map((f) => f.memoryKey)).toEqual(['fresh-plan']);
  });

  it('the retention activity deletes expired memories with their blobs and reports the count; a rerun deletes nothing', async () => {
    const userId = fresh().userId;
    await create(userId, { content: 'x'.repeat(10_000), ttlSeconds: 60 });
    await create(userId, { content: 'small', ttlClass: 'working' });
    const kept = json(await create(userId, { content: 'y'.repeat(10_000) })).key as string;
    const now = new Date(Date.now() + 31 * 60_000).toISOString();
    const ctx = context('activity-retention-apply');
    expect(await retentionActivity.handler({ userId, now }, ctx)).toEqual({ expired: 0, artifactsExpired: 2 });
    expect(ctx.logs.map((l) => l.message)).toContainEqual(expect.stringMatching(/0 expired insights and 2 expired artifacts/));
    expect(await retentionActivity.handler({ userId, now }, context('activity-retention-apply'))).toEqual({ expired: 0, artifactsExpired: 0 });
    expect(await runtime.detail.artifacts.pendingBlobDeletions(userId, 10)).toEqual([]);
    expect((json(await list(userId)).items as { key: string }[]).map((i) => i.key)).toEqual([kept]);
  });

  it('an offloaded tool output is episodic (7 days), an offloaded user message permanent', async () => {
    const key = fresh();
    await append(key, [
      { role: 'user', content: textOf(700), turnId: 'paste' },
      { role: 'tool', content: textOf(700), turnId: 'tool', name: 'shell' },
    ]);
    const tool = json(await get(key.userId, turnArtifactKey(key, 'tool')));
    expect(tool.expiresAt).toBe(plus(tool.createdAt, 7 * DAY_SECONDS));
    expect(json(await get(key.userId, turnArtifactKey(key, 'paste'))).expiresAt).toBeNull();
  });

  it('a MemoryRef to an expired tool output resolves like a missing one: the placeholder stays, fetching it is 404', async () => {
    const key = fresh();
    const output = textOf(900);
    // Appended eight days ago: its episodic artifact has expired since.
    await atOffset(runtime, -8 * DAY_SECONDS, () => append(key, [{ role: 'tool', content: output, turnId: 'old-tool', name: 'fetch' }]));
    const ctx = await getContext(key);
    expect(ctx.text).not.toContain(output);
    expect(ctx.text).toContain(`[MemoryRef: ${turnArtifactKey(key, 'old-tool')} - `);
    expect((await get(key.userId, turnArtifactKey(key, 'old-tool'))).status).toBe(404);
  });
});
