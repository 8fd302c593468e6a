import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { appendTurns } from '../../application/append-turns.js';
import { createSnapshot, deleteMemory, restoreSnapshot, retrieveMemory, searchMemories, storeMemory } from '../../application/artifacts.js';
import { getContext } from '../../application/get-context.js';
import { getSessionStatus } from '../../application/get-session-status.js';
import { recordHandoff } from '../../application/handoff.js';
import type { OrchestrationClient } from '../../application/operation-ports.js';
import { findFacts } from '../../application/retrieval-agent.js';
import { endSession } from '../../application/session-end.js';
import { CreateSnapshotBody, GetMemoryQuery, MemoryKeyParams, RestoreSnapshotBody, SearchMemoriesQuery, SnapshotParams, StoreMemoryBody, ViewerQuery } from '../../contracts/artifacts.js';
import { ContextQuery } from '../../contracts/context.js';
import { PutSlotBody, SlotParams, SlotQuery } from '../../contracts/slots.js';
import { getSlot, putSlot } from '../../application/slots.js';
import { FactSearchBody } from '../../contracts/facts.js';
import { Id, SessionKey } from '../../contracts/ids.js';
import { HandoffBody } from '../../contracts/sessions.js';
import { AppendTurnsBody } from '../../contracts/turns.js';
import { MemoryError } from '../../domain/errors.js';
import type { Runtime } from '../composition.js';
import { authorizeAgents, authorizeUser, type Principal } from '../../application/auth.js';
import { viewerFor } from '../../application/viewer.js';
import { bodyAgents, LOCAL_PRINCIPAL } from '../auth.js';

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
 * The MCP face of the API: every tool calls the use case behind the HTTP route of the same purpose, with the route's
 * contract as its input schema. Tools take the userId like the API's path does, and each checks it (and any agentId)
 * against the caller's principal as the HTTP routes do. Over stdio the caller is the local process that started the
 * server, trusted with every user (LOCAL_PRINCIPAL); over HTTP it is whoever authenticated. `orchestrations` starts the
 * session-end orchestration (the HTTP function's durable client, or the local runner); stdio has none.
 */
export function createMcpServer(runtime: Runtime, principal: Principal = LOCAL_PRINCIPAL, options: { orchestrations?: () => OrchestrationClient } = {}): McpServer {
  /** Runs a tool for `userId` after the same authorization an HTTP route applies; `agentId` may be a list (a body's agents). */
  const runFor = (userId: string, agentId: unknown, fn: () => Promise<CallToolResult>) =>
    run(async () => {
      authorizeUser(principal, userId);
      authorizeAgents(principal, Array.isArray(agentId) ? agentId : [agentId]);
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

  // --- The rest of the API: turns, session status and end, fact search, memory delete, snapshots. ---

  server.registerTool(
    'append_turns',
    {
      description:
        'Append 1–100 turns to a session (role, content, optional name, agentId, turnId, timestamp, toolCalls, toolCallId). Retrying with the same turnId returns the original seq and writes nothing. Returns {accepted:[{turnId, seq}]}.',
      inputSchema: { ...SessionKey.shape, ...AppendTurnsBody.shape },
    },
    ({ userId, sessionId, ...input }) => runFor(userId, bodyAgents(input), async () => text(await appendTurns(runtime, { userId, sessionId }, AppendTurnsBody.parse(input)))),
  );

  server.registerTool(
    'get_session',
    {
      description: 'Session status: status (active, ending, completed), reflectionStatus, lastSeq, pending (events not yet projected), turnCount, agentIds, summary, threads and handoffs.',
      inputSchema: SessionKey.shape,
    },
    ({ userId, sessionId }) => runFor(userId, undefined, async () => text(await getSessionStatus(runtime, { userId, sessionId }))),
  );

  server.registerTool(
    'end_session',
    {
      description:
        'End a session: summary, reflection into insights and the profile run as an operation. Returns {operationId}; ending again returns the same operation. The session then takes no more turns.',
      inputSchema: SessionKey.shape,
    },
    ({ userId, sessionId }) =>
      runFor(userId, undefined, async () => {
        if (!options.orchestrations) throw new MemoryError('upstream_unavailable', 'Ending a session starts an orchestration: use the MCP endpoint of the local host or of Azure, not stdio');
        const { operationId } = await endSession(runtime, options.orchestrations(), { userId, sessionId }, 'client');
        return text({ operationId });
      }),
  );

  server.registerTool(
    'search_facts',
    {
      description:
        "Search the user's long-term memory (turns, interactions, artifacts, insights, session summaries), hybrid full-text and vector, best first. mode 'agent' runs the retrieval agent, which also returns a synthesised answer citing the facts.",
      inputSchema: { userId: Id, ...FactSearchBody.shape },
    },
    ({ userId, ...input }) =>
      runFor(userId, input.agentId, async () => {
        return text(await findFacts(runtime, principal, userId, FactSearchBody.parse(input)));
      }),
  );

  server.registerTool(
    'delete_memory',
    {
      description: 'Delete an artifact of detail memory (and its blob) by key. Returns {key, deleted: true}; an unknown or expired key, or one the reader may not see, is not_found.',
      inputSchema: { ...MemoryKeyParams.shape, ...ViewerQuery.shape },
    },
    ({ userId, key, ...reader }) => runFor(userId, reader.agentId, async () => text(await deleteMemory(runtime, principal, await viewerFor(runtime, principal, { userId, ...reader }), key))),
  );

  server.registerTool(
    'create_snapshot',
    {
      description: 'Snapshot chosen artifacts (keys) to hand to a sub-agent. Returns {snapshotId, keys, createdAt}; restore it with restore_snapshot.',
      inputSchema: { userId: Id, ...CreateSnapshotBody.shape },
    },
    ({ userId, ...input }) =>
      runFor(userId, [input.agentId, input.fromAgentId], async () => {
        const body = CreateSnapshotBody.parse(input);
        return text(await createSnapshot(runtime, await viewerFor(runtime, principal, { userId, agentId: body.fromAgentId, sessionId: body.sessionId }), body));
      }),
  );

  server.registerTool(
    'restore_snapshot',
    {
      description: "Copy a snapshot's artifacts into an agent's view. Returns {restored:[{from, key}], missing}; restoring twice is harmless.",
      inputSchema: { ...SnapshotParams.shape, ...RestoreSnapshotBody.shape },
    },
    ({ userId, snapshotId, ...input }) => runFor(userId, input.agentId, async () => text(await restoreSnapshot(runtime, userId, snapshotId, RestoreSnapshotBody.parse(input)))),
  );

  return server;
}

/**
 * One MCP request over streamable HTTP, stateless: a fresh server and transport per request, so no session state is
 * held and any instance can answer; answers are JSON, not SSE streams. Serves the HTTP function functions/http-mcp.ts
 * (Azure, and /mcp on the local host). `body` is the request's JSON, read under the HTTP limits.
 */
export async function handleMcpRequest(runtime: Runtime, principal: Principal, request: Request, body: unknown, options: { orchestrations?: () => OrchestrationClient } = {}): Promise<Response> {
  const server = createMcpServer(runtime, principal, options);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  try {
    await server.connect(transport);
    return await transport.handleRequest(request, { parsedBody: body });
  } finally {
    await transport.close();
    await server.close();
  }
}
