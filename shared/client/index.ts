// The package's `./client` entry point: `import { MemoryClient } from 'agent-memory-service/client'`.
// The memory hooks have their own entries (`./client/ai-sdk`, `./client/openai-agents`), so importing the client
// never needs `ai` or `@openai/agents`.
export { MemoryClient, MAX_TURNS_PER_APPEND } from './client.js';
export type {
  Credentials,
  FactSearchInput,
  GetMemoryInput,
  HandoffInput,
  Health,
  ListMemoriesInput,
  MemoryClientOptions,
  RestoreResult,
  RetrievedMemory,
  StoreMemoryInput,
  TurnInput,
  WaitOptions,
} from './client.js';
export { MemoryServiceError, type MemoryErrorCode } from './errors.js';
export { parseRetryAfter, RETRY_DEFAULTS, type RetryOptions } from './retry.js';
export type { ArtifactSummary } from '../contracts/artifacts.js';
export type { ContextResponse, ContextTurn } from '../contracts/context.js';
export type { Fact, FactSearchResult } from '../contracts/facts.js';
export type { InsightView, ProfileDocument } from '../contracts/insights.js';
export type { MessagesResponse, OpenAIMessage } from '../contracts/messages.js';
export type { OperationStatus } from '../contracts/operations.js';
export type { Problem } from '../contracts/problem.js';
export type { HandoffResult, SessionEventsPage, SessionStatus } from '../contracts/sessions.js';
export type { AppendTurnsResult, ToolCall } from '../contracts/turns.js';
