/** Every MCP tool (shared/platform/mcp/server.ts): the API's routes as tools. The MCP tests compare tools/list against it. */
export const MCP_TOOLS = [
  'append_turns',
  'create_snapshot',
  'delete_memory',
  'end_session',
  'get_context',
  'get_session',
  'handoff',
  'restore_snapshot',
  'retrieve_memory',
  'search_facts',
  'search_memory',
  'slot_get',
  'slot_set',
  'store_memory',
] as const;
