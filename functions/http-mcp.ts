import { z } from 'zod';
import type { ErrorCode } from '../shared/contracts/problem.js';
import { MemoryError } from '../shared/domain/errors.js';
import { getRuntime } from '../shared/platform/composition.js';
import { settings } from '../shared/platform/config.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpEndpoint, problem, readJson, type RouteDoc } from '../shared/platform/http.js';
import { handleMcpRequest } from '../shared/platform/mcp/server.js';

/** A JSON-RPC 2.0 message or batch, as the document shows it (the MCP SDK validates it in full). */
const JsonRpc = z.object({ jsonrpc: z.literal('2.0'), id: z.union([z.string(), z.number()]).optional(), method: z.string().optional() }).loose();

/** The transport's refusals (JSON-RPC errors) become problem+json with the same status. */
const CODES: Record<number, ErrorCode> = { 400: 'validation_failed', 404: 'not_found', 405: 'method_not_allowed', 406: 'not_acceptable', 409: 'conflict', 413: 'payload_too_large', 415: 'unsupported_media_type' };

/** True when a JSON-RPC message (or batch) calls the append_turns tool. */
const callsAppend = (body: unknown) =>
  (Array.isArray(body) ? body : [body]).some((m: { method?: unknown; params?: { name?: unknown } } | null) => m?.method === 'tools/call' && m.params?.name === 'append_turns');

const notStateful: RouteDoc = { access: 'handler', summary: 'Not served: the endpoint is stateless (no server-initiated stream, no session to end)', responses: {}, problems: ['method_not_allowed'] };

/**
 * MCP over streamable HTTP, stateless, with the REST API's authentication (401 without credentials); each tool then
 * checks its userId against the principal. POST carries JSON-RPC; GET (a server-initiated stream) and DELETE (end a
 * session) are 405, as the transport's stateless mode expects. Served by Azure at /api/mcp and by the local host at
 * /mcp and /api/mcp.
 */
/** The request size limit, read when a request comes (settings load with the runtime). */
const maxBodyBytes = () => settings().MAX_REQUEST_BYTES;

export const handler = httpEndpoint(
  {
    access: 'handler',
    summary: 'MCP (Model Context Protocol) over streamable HTTP, stateless: JSON-RPC in, JSON out',
    maxBodyBytes,
    body: { contentType: 'application/json', schema: z.union([JsonRpc, z.array(JsonRpc)]) },
    responses: {
      200: { description: 'The JSON-RPC response(s)', contentType: 'application/json', schema: z.union([JsonRpc, z.array(JsonRpc)]) },
      202: { description: 'Notifications or responses only: accepted, no body' },
    },
    problems: ['not_acceptable', 'payload_too_large', 'unsupported_media_type', 'overloaded'],
    methods: { GET: notStateful, DELETE: notStateful },
  },
  async (req, ctx, principal) => {
    if (req.method !== 'POST') {
      const refused = problem(new MemoryError('method_not_allowed', `${req.method} is not served: this MCP endpoint is stateless`), new URL(req.url).pathname);
      return { ...refused, headers: { ...(refused.headers as Record<string, string>), allow: 'POST' } };
    }
    const body = await readJson(req, maxBodyBytes());
    const runtime = await getRuntime();
    // Over the memory budget an append is refused as the REST route refuses it (503, Retry-After), not as a tool error
    // inside a 200 that a client's retry would not see; a batch with one is refused whole, before any of it runs.
    if (callsAppend(body)) runtime.admission?.admit();
    const request = new Request(req.url, { method: 'POST', headers: Object.fromEntries(req.headers) });
    const response = await handleMcpRequest(runtime, principal, request, body, { orchestrations: () => orchestrationClient(ctx) });
    const text = await response.text();
    if (response.status >= 400) {
      const rpc = (() => {
        try {
          return (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
        } catch {
          return undefined;
        }
      })();
      throw new MemoryError(CODES[response.status] ?? 'internal', typeof rpc === 'string' ? rpc : `MCP transport answered ${response.status}`);
    }
    return { status: response.status, headers: Object.fromEntries(response.headers), ...(text !== '' && { body: text }) };
  },
);

export default defineFunction({ name: 'http-mcp', trigger: http(['POST', 'GET', 'DELETE'], 'mcp', { durableClient: true }), handler });
