import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalHost } from '../../shared/platform/local-host/host.js';

// Fuzz every HTTP route of the local host (found from the app's own function descriptors, so a new route is fuzzed too)
// over its path, query and body: no input reaches a 5xx, and every error is problem+json.

type Host = Awaited<ReturnType<typeof startLocalHost>>;
const dataDir = mkdtempSync(join(tmpdir(), 'memory-fuzz-'));
let host: Host;
let routes: { methods: readonly string[]; route: string }[];

beforeAll(async () => {
  process.env.MEMORY_DATA_DIR = dataDir;
  process.env.PUMP_INTERVAL_MS = '50';
  process.env.BODY_TIMEOUT_MS = '500';
  host = await startLocalHost({ port: 0, timers: false });
  routes = host.functions.flatMap((f) => (f.trigger.kind === 'http' ? [{ methods: f.trigger.methods, route: f.trigger.route }] : []));
});
afterAll(async () => {
  await host?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The strings issue 15 found reaching a 500, and their neighbours. */
const HOSTILE = [
  'a\u0000b', '\u0000', 'x\uD83D', '\uDE00y', '😀'.repeat(2000), '0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '10000-01-01T00:00:00Z',
  '(a+)+$', '(a)\\1', '[', '%', '..', '', ' ', 'x'.repeat(5000), '-1', '1e309', 'NaN', '__proto__', 'constructor', '<script>',
];
const hostileString = fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ maxLength: 20 }));
const scalar = fc.oneof(hostileString, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const FIELDS = ['turns', 'role', 'content', 'name', 'turnId', 'timestamp', 'toolCalls', 'toolCallId', 'agentId', 'query', 'from', 'to', 'topK', 'maxTokens',
  'sources', 'retrievers', 'sessionId', 'minScore', 'mode', 'key', 'type', 'source', 'tags', 'description', 'contentKind', 'goal', 'ttlClass', 'ttlSeconds', 'keys'];
const value = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.constantFrom(...FIELDS), tie('v'), { maxKeys: 4 })),
})).v;
const turnLike = fc.record({ role: fc.oneof(fc.constantFrom('user', 'assistant', 'tool', 'system'), hostileString), content: scalar, timestamp: scalar, toolCalls: fc.array(fc.record({ id: scalar, type: fc.constant('function'), function: fc.record({ name: scalar, arguments: scalar }) }), { maxLength: 2 }) }, { requiredKeys: ['role', 'content'] });

const body = fc.oneof(
  fc.constant(undefined),
  value.map((v) => JSON.stringify(v) ?? 'null'),
  fc.array(turnLike, { minLength: 1, maxLength: 3 }).map((turns) => JSON.stringify({ turns })),
  fc.dictionary(fc.constantFrom(...FIELDS), scalar, { maxKeys: 5 }).map((o) => JSON.stringify(o)),
  fc.constantFrom('{"turns":', '[[[[', `{"content":${'['.repeat(5000)}${']'.repeat(5000)}}`, 'not json', '"\\ud800"', '{"content":"\\u0000"}'),
);
/** encodeURIComponent, which throws on a lone surrogate: that one travels as the bytes of an encoded surrogate. */
const encode = (s: string) => {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
};
const segment = fc.oneof(fc.constantFrom('u1', 's1', 'k1', 'op-1'), hostileString.map(encode), fc.constantFrom('%00', '%', '%ED%A0%80', '..', 'a%2Fb'));
const QUERY_KEYS = ['limit', 'cursor', 'from', 'to', 'type', 'source', 'tags', 'transform', 'pattern', 'n', 'after', 'maxTokens', 'agentId', 'category', 'status', 'sessionId'];
const query = fc.dictionary(fc.oneof(fc.constantFrom(...QUERY_KEYS), fc.string({ maxLength: 8 })), fc.oneof(hostileString, fc.integer().map(String), fc.constantFrom('filtered', 'first_n', 'excerpt')), { maxKeys: 4 });
const contentType = fc.oneof({ weight: 4, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8', '') });

describe('fuzz: every route, body, path and query', () => {
  it('no 5xx, every error problem+json', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.oneof({ weight: 5, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat() }), fc.array(segment, { minLength: 4, maxLength: 4 }), query, body, contentType, async (r, m, segments, q, text, type) => {
        const route = routes[r % routes.length]!;
        // Mostly the route's own method (-1), sometimes another.
        const methods = ['GET', 'POST', 'DELETE', 'PUT', 'HEAD'];
        const method = m < 0 ? route.methods[0]! : methods[m % methods.length]!;
        let i = 0;
        const path = route.route.replace(/\{\w+\}/g, () => segments[i++ % segments.length]!);
        const search = new URLSearchParams(q).toString();
        const withBody = method !== 'GET' && method !== 'HEAD' && text !== undefined;
        const response = await fetch(`${host.url}/${path}${search ? `?${search}` : ''}`, { method, ...(withBody && { body: text }), headers: type ? { 'content-type': type } : {} });
        const answer = await response.text();
        expect(response.status, `${method} ${path} → ${response.status} ${answer.slice(0, 200)}`).toBeLessThan(500);
        if (response.status >= 400) expect(response.headers.get('content-type'), `${method} ${path}`).toBe('application/problem+json');
      }),
      { numRuns: 300, seed: Number(process.env.FUZZ_SEED ?? 20261124) },
    );
  }, 240_000);
});
