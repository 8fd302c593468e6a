import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as appendHandler } from '../../../functions/http-turns-append.js';
import { handler as healthHandler } from '../../../functions/http-health-get.js';
import { handler as deleteHandler } from '../../../functions/http-memory-delete.js';
import { nestsDeeperThan } from '../../../shared/platform/http-limits.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

// The Azure path: the same limits in httpHandler as on the local host, on the library's own HttpRequest.
let runtime: Runtime;
beforeAll(async () => {
  process.env.MAX_REQUEST_BYTES = '2048'; // read once, by the first handler that takes a body
  runtime = await memoryRuntime({ MAX_REQUEST_BYTES: '2048' });
});
afterAll(async () => runtime?.close());

const params = { userId: 'u', sessionId: 's' };
const append = (body: string, headers: Record<string, string> = {}) => appendHandler(request('POST', 'v1/users/u/sessions/s/turns', { params, body, headers }), context('http-turns-append'));

describe('httpHandler limits', () => {
  it('a declared Content-Length over the limit is 413 before the body is read', async () => {
    const response = await append('{}', { 'content-length': '999999' });
    expect(response.status).toBe(413);
    expect(json(response).code).toBe('payload_too_large');
  });

  it('a body over the limit without a declared length is 413 while it is read', async () => {
    const response = await append(JSON.stringify({ turns: [{ role: 'user', content: 'x'.repeat(5000) }] }));
    expect(response.status).toBe(413);
  });

  it('a write that is not JSON is 415', async () => {
    const response = await append('{"turns":[{"role":"user","content":"hi"}]}', { 'content-type': 'text/plain' });
    expect(response.status).toBe(415);
    expect(json(response).code).toBe('unsupported_media_type');
  });

  it('JSON nested deeper than 64 levels is 400 before JSON.parse', async () => {
    const response = await append(`{"turns":${'['.repeat(100)}${']'.repeat(100)}}`);
    expect(response.status).toBe(400);
    expect(nestsDeeperThan('{"a":"[[[[[[[[[[[[[["}', 2)).toBe(false);
    expect(nestsDeeperThan('[[["\\"["]]]', 3)).toBe(false);
    expect(nestsDeeperThan('[[[[]]]]', 3)).toBe(true);
  });

  it('a body on a route that takes none is 400', async () => {
    const withBody = (h: typeof healthHandler, name: string) => h(request('DELETE', 'v1/users/u/memories/k', { params: { userId: 'u', key: 'k' }, body: '{}', headers: { 'content-length': '2' } }), context(name));
    expect((await withBody(deleteHandler, 'http-memory-delete')).status).toBe(400);
    expect((await withBody(healthHandler, 'http-health-get')).status).toBe(400);
  });
});
