import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { retrieveMemory, searchMemories, storeMemory } from '../../application/artifacts.js';
import { getContext } from '../../application/get-context.js';
import { recordHandoff } from '../../application/handoff.js';
import { GetMemoryQuery, MemoryKeyParams, SearchMemoriesQuery, StoreMemoryBody } from '../../contracts/artifacts.js';
import { ContextQuery } from '../../contracts/context.js';
import { PutSlotBody, SlotParams, SlotQuery } from '../../contracts/slots.js';
import { getSlot, putSlot } from '../../application/slots.js';
import { Id, SessionKey } from '../../contracts/ids.js';
import { HandoffBody } from '../../contracts/sessions.js';
import { MemoryError } from '../../domain/errors.js';
import type { Runtime } from '../composition.js';
import { authorizeAgents, authorizeUser, type Principal } from '../../application/auth.js';
import { viewerFor } from '../../application/viewer.js';
import { LOCAL_PRINCIPAL } from '../auth.js';
import { problem } from '../http.js';

const text = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) }] });

/** Runs a tool through the same use case the HTTP API calls; expected failures come back as tool errors with their code. */
async function run(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof MemoryError) return { isError: true, content: [{ type: 'text', text: `${error.code}: ${error.message}` }] };
    if (error instanceof z.ZodError) return { isError: true, content: [{ type: 'text', text: `validation_failed: ${error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` }] };
    throw error;
  }
}

/**
 * The MCP face of detail memory (seed 002's wrapper) over artifacts: store_memory, retrieve_memory, search_memory and get_context,
 * plus slot_get and slot_set (core memory),
 * each calling the use case behind the HTTP API. Tools take the userId like the API's path does, and each checks it
 * (and any agentId) against the caller's principal as the HTTP routes do. Over stdio the caller is the local process
 * that started the server, trusted with every user (LOCAL_PRINCIPAL); over HTTP it is whoever authenticated.
 */
export function createMcpServer(runtime: Runtime, principal: Principal = LOCAL_PRINCIPAL): McpServer {
  /** Runs a tool for `userId` after the same authorization an HTTP route applies. */
  const runFor = (userId: string, agentId: unknown, fn: () => Promise<CallToolResult>) =>
    run(async () => {
      authorizeUser(principal, userId);
      authorizeAgents(principal, [agentId]);
      return fn();
    });
  const server = new McpServer({ name: 'agent-memory-service', version: '0.1.0' });

  server.registerTool(
    'store_memory',
    {
      description:
        'Store content (a tool output, file, query result, note) as an artifact in detail memory. Returns its key, description, token count and expiresAt; cite it later as [MemoryRef: <key>]. Kept for good unless ttlClass or ttlSeconds says otherwise; once expired it is gone.',
      inputSchema: { userId: Id, ...StoreMemoryBody.shape },
    },
    ({ userId, ...input }) => runFor(userId, input.agentId, async () => text(await storeMemory(runtime, principal, userId, StoreMemoryBody.parse(input)))),
  );

  server.registerTool(
    'retrieve_memory',
    {
      description:
        'Fetch an artifact by key (the <key> of a [MemoryRef: <key> - …] placeholder). transform: full (default), excerpt (n chars), summary, first_n / last_n (n lines), filtered (lines matching pattern).',
      inputSchema: { ...MemoryKeyParams.shape, ...GetMemoryQuery.shape },
    },
    ({ userId, key, ...query }) =>
      runFor(userId, query.agentId, async () => {
        const memory = await retrieveMemory(runtime, await viewerFor(runtime, principal, { userId, agentId: query.agentId, sessionId: query.sessionId }), key, GetMemoryQuery.parse(query));
        const { content, ...meta } = memory;
        return { content: [{ type: 'text', text: content }, { type: 'text', text: JSON.stringify(meta) }] };
      }),
  );

  server.registerTool(
    'search_memory',
    {
      description:
        "Search the user's artifacts (descriptions and contents) by words; returns keys, descriptions and excerpts, best first. Give agentId (and sessionId) to search only what that agent may see.",
      inputSchema: { userId: Id, ...SearchMemoriesQuery.shape },
    },
    ({ userId, query, limit, agentId, sessionId }) =>
      runFor(userId, agentId, async () => text({ hits: await searchMemories(runtime, await viewerFor(runtime, principal, { userId, agentId, sessionId }), query, limit) })),
  );

  server.registerTool(
    'get_context',
    {
      description:
        "The compact context block of a session: summary plus active turns, large outputs as [MemoryRef: …] placeholders (listed in memoryRefs). With agentId: that agent's thread, the turns every agent shares, the other agents' summaries and the last handoff it received.",
      inputSchema: { ...SessionKey.shape, ...ContextQuery.shape },
    },
    ({ userId, sessionId, ...query }) =>
      runFor(userId, query.agentId, async () => {
        const agentId = query.agentId ?? principal.agentId;
        const context = await getContext(runtime, { userId, sessionId }, { ...query, ...(agentId !== undefined && { agentId }) });
        return { content: [{ type: 'text', text: context.text }, { type: 'text', text: JSON.stringify({ tokens: context.tokens, memoryRefs: context.memoryRefs }) }] };
      }),
  );

  server.registerTool(
    'handoff',
    {
      description:
        "Hand the session over from one agent to another. The receiver's next context starts with who handed over, the note, a summary of the sender's thread and the memory keys passed along (readable by the receiver even if they were the sender's private memory).",
      inputSchema: { ...SessionKey.shape, ...HandoffBody.shape },
    },
    ({ userId, sessionId, ...input }) => runFor(userId, input.fromAgentId, async () => text(await recordHandoff(runtime, { userId, sessionId }, HandoffBody.parse(input)))),
  );

  server.registerTool(
    'slot_get',
    {
      description:
        "Read a slot (core memory): a small named JSON value such as user_profile or task_plan. scope: private (this agent's; needs agentId), session (every agent of the session; needs sessionId), user (default), global. Returns value and version.",
      inputSchema: { ...SlotParams.shape, ...SlotQuery.shape },
    },
    ({ userId, name, ...query }) => runFor(userId, query.agentId, async () => text(await getSlot(runtime, principal, userId, name, SlotQuery.parse(query)))),
  );

  server.registerTool(
    'slot_set',
    {
      description:
        'Write a slot (core memory). expectedVersion: the version you read (the write fails with precondition_failed if the slot changed since), or 0 to create only; omit it to overwrite. Returns the slot with its new version.',
      inputSchema: {
        ...SlotParams.shape,
        ...SlotQuery.shape,
        ...PutSlotBody.shape,
        expectedVersion: z.number().int().nonnegative().optional().describe('The version the write expects the slot to be at; 0 = the slot must not exist yet.'),
      },
    },
    ({ userId, name, expectedVersion, value, ttlClass, ...query }) =>
      runFor(userId, query.agentId, async () => {
        const condition = expectedVersion === undefined ? {} : expectedVersion === 0 ? { ifNoneMatch: '*' as const } : { ifMatch: expectedVersion };
        const { slot } = await putSlot(runtime, principal, userId, name, SlotQuery.parse(query), PutSlotBody.parse({ value, ...(ttlClass && { ttlClass }) }), condition);
        return text(slot);
      }),
  );

  return server;
}

/**
 * Streamable HTTP (stateless): every request gets a fresh server and transport, so no session state is held and any
 * instance can answer. Used by the local host at /mcp.
 */
export async function handleMcpHttp(runtime: Runtime, req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
  let principal: Principal;
  try {
    principal = await runtime.auth.authenticate(req.headers.authorization);
  } catch (error) {
    if (!(error instanceof MemoryError)) throw error;
    const answer = problem(error, '/mcp');
    req.resume();
    res.writeHead(answer.status ?? 500, answer.headers as Record<string, string>).end(JSON.stringify(answer.jsonBody));
    return;
  }
  const server = createMcpServer(runtime, principal);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}
