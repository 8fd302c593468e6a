import { z } from 'zod';
import { FactSearchBody } from './facts.js';
import { Id } from './ids.js';
import { Scope } from './scopes.js';
import { Instant, ordered, ORDERED_RANGE, Text } from './text.js';

/** Artifact keys travel in URLs and placeholders: same alphabet as the other ids. */
export const ArtifactKey = Id;

/**
 * The owner partition of `global` artifacts (PostgreSQL `user_id`, Cosmos DB partition key `/userId`, blob name
 * prefix). `@` is outside the Id alphabet, so no real userId can take it, and forgetting a user never reaches it.
 */
export const GLOBAL_OWNER = '@global';

/** How the compaction plugins read the content (detected unless the producer says). */
export const ContentKind = z.enum(['json', 'log', 'html', 'code', 'text']);
export type ContentKind = z.infer<typeof ContentKind>;

/** The design's TTL classes (working 30 min, session 2 h, episodic 7 d, semantic permanent); `TTL_CLASSES` in domain/retention.ts holds their lifetimes. */
export const TtlClass = z.enum(['working', 'session', 'episodic', 'semantic']);
export type TtlClass = z.infer<typeof TtlClass>;

/** The bounds of an artifact's own `ttlSeconds`: a minute to a year (longer-lived memory is `semantic`, permanent). */
export const ARTIFACT_TTL_MIN_SECONDS = 60;
export const ARTIFACT_TTL_MAX_SECONDS = 365 * 24 * 60 * 60;

const Tag = z.string().regex(/^[A-Za-z0-9._:/-]{1,64}$/, 'tags match [A-Za-z0-9._:/-]{1,64}');

/**
 * One artifact: an item of detail memory (layer 2). The content lives inline in the store up to ARTIFACT_INLINE_MAX_BYTES, above it
 * in Blob Storage under `blobName`; `contentHash` (sha256 of the UTF-8 bytes) proves a round trip.
 */
export const ArtifactRecord = z.object({
  /** The owning user; GLOBAL_OWNER for a `global` artifact, which belongs to no user. */
  userId: z.union([Id, z.literal(GLOBAL_OWNER)]),
  key: ArtifactKey,
  /**
   * Who may see it (shared/domain/scopes.ts): `private` its `agentId` (and agents it was handed to), `session` the agents
   * of its `sessionId`, `user` every agent of the user, `global` every user. Records written before scopes read as `user`.
   */
  scope: Scope.default('user'),
  /** `tool_output` for offloaded turns; free-form for artifacts stored through the API (`web_content`, `database_result`, ...). */
  type: z.string().min(1).max(64),
  /** Tool or producer name. */
  source: z.string().max(256).optional(),
  tags: z.array(Tag).max(32),
  description: z.string(),
  contentKind: ContentKind,
  tokens: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  contentHash: z.string(),
  sessionId: Id.optional(),
  agentId: Id.optional(),
  /** For offloaded turns: the turn it came from. */
  turnId: Id.optional(),
  /** Set when a snapshot restored it into another agent's view. */
  restoredFrom: z.object({ snapshotId: Id, key: ArtifactKey }).optional(),
  createdAt: z.iso.datetime(),
  /**
   * When the artifact stops existing for readers (from its TTL class or ttlSeconds at write time); null = permanent.
   * Records written before TTLs existed have none and read as permanent.
   */
  expiresAt: z.iso.datetime().nullable().default(null),
  storage: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('inline'), content: z.string() }),
    z.object({ kind: z.literal('blob'), blobName: z.string() }),
  ]),
});
export type ArtifactRecord = z.infer<typeof ArtifactRecord>;

/** What the API shows of an artifact without its content. */
export const ArtifactSummary = ArtifactRecord.omit({ storage: true }).extend({ storage: z.enum(['inline', 'blob']) });
export type ArtifactSummary = z.infer<typeof ArtifactSummary>;

export const StoreMemoryBody = z
  .object({
    /** A string is stored as is; any other JSON value is stored as its pretty-printed JSON text. */
    content: z.union([Text, z.record(z.string(), z.unknown()), z.array(z.unknown())]),
    key: ArtifactKey.optional(),
    type: Text.min(1).max(64).default('custom'),
    source: Text.min(1).max(256).optional(),
    tags: z.array(Tag).max(32).default([]),
    /** Replaces the plugin-made description. */
    description: Text.min(1).max(2000).optional(),
    contentKind: ContentKind.optional(),
    sessionId: Id.optional(),
    agentId: Id.optional(),
    scope: Scope.default('user').describe(
      'Who may see it: user (default: every agent of the user), private (only agentId; needs agentId), session (every agent of sessionId; needs sessionId), global (every user; admin principals only).',
    ),
    /** Steers LLM compaction when a model is configured. */
    goal: Text.max(2000).optional().describe('The goal of the current task: the description then says what in the content matters for it.'),
    ttlClass: TtlClass.optional().describe('How long to keep it: working (30 min), session (2 h), episodic (7 days), semantic (permanent, the default). Exclusive with ttlSeconds.'),
    ttlSeconds: z
      .number()
      .int()
      .min(ARTIFACT_TTL_MIN_SECONDS)
      .max(ARTIFACT_TTL_MAX_SECONDS)
      .optional()
      .describe(`How long to keep it, in seconds (${ARTIFACT_TTL_MIN_SECONDS} to ${ARTIFACT_TTL_MAX_SECONDS}). Exclusive with ttlClass.`),
  })
  .strict()
  .refine((b) => b.ttlClass === undefined || b.ttlSeconds === undefined, { message: 'give ttlClass or ttlSeconds, not both', path: ['ttlSeconds'] });
export type StoreMemoryBody = z.infer<typeof StoreMemoryBody>;

const csv = z
  .string()
  .transform((s) => s.split(',').map((t) => t.trim()).filter(Boolean))
  .pipe(z.array(Tag).max(32));

export const ListMemoriesQuery = z.object({
  type: Text.min(1).max(64).optional(),
  source: Text.min(1).max(256).optional(),
  /** Comma-separated; an artifact must carry every tag. */
  tags: csv.optional(),
  from: Instant.optional(),
  to: Instant.optional(),
  /** Who reads (not a filter by creator): the session the agent acts in, and the agent (see `Viewer`). */
  sessionId: Id.optional(),
  agentId: Id.optional(),
  /** Only artifacts of this scope (among those the reader may see). */
  scope: Scope.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,512}$/, 'not a cursor this service issued').optional(),
}).refine(ordered, ORDERED_RANGE);
export type ListMemoriesQuery = z.infer<typeof ListMemoriesQuery>;

/** The longest `filtered` pattern: RE2 runs in time linear in content × pattern, so both are bounded. */
export const MAX_PATTERN_LENGTH = 256;

export const Transform = z.enum(['full', 'excerpt', 'summary', 'first_n', 'last_n', 'filtered']);
export type Transform = z.infer<typeof Transform>;

export const GetMemoryQuery = z
  .object({
    transform: Transform.default('full'),
    /** Lines for first_n / last_n (default 20); characters for excerpt (default 2000). */
    n: z.coerce.number().int().min(1).max(1_000_000).optional(),
    /** filtered: a regular expression (case-insensitive) lines must match. */
    pattern: Text.min(1).max(MAX_PATTERN_LENGTH).optional(),
    /** Who reads: an artifact this agent (in this session) may not see is 404 like an unknown key. */
    agentId: Id.optional(),
    sessionId: Id.optional(),
  })
  .refine((q) => q.transform !== 'filtered' || q.pattern !== undefined, { message: 'transform=filtered needs a pattern', path: ['pattern'] });
export type GetMemoryQuery = z.infer<typeof GetMemoryQuery>;

export const MemoryKeyParams = z.object({ userId: Id, key: ArtifactKey });

/** Who reads (or deletes), for routes that take nothing else in the query. */
export const ViewerQuery = z.object({ agentId: Id.optional(), sessionId: Id.optional() });

/** A word search over the user's live artifacts (descriptions and inline contents), best first. */
export const SearchMemoriesQuery = z.object({
  query: FactSearchBody.shape.query,
  limit: z.number().int().min(1).max(50).default(5),
  /** Who reads: only artifacts this agent (in this session) may see are searched. */
  agentId: Id.optional(),
  sessionId: Id.optional(),
});
export type SearchMemoriesQuery = z.infer<typeof SearchMemoriesQuery>;

export const CreateSnapshotBody = z
  .object({
    keys: z.array(ArtifactKey).min(1).max(500),
    /** The agent the snapshot is made for (informational). */
    agentId: Id.optional(),
    /** Who makes it: every key must be one this agent (in this session) may see; any other is reported unknown (404). */
    fromAgentId: Id.optional(),
    sessionId: Id.optional(),
  })
  .strict();
export type CreateSnapshotBody = z.infer<typeof CreateSnapshotBody>;

/** The copies are `private` to `agentId`: that agent sees them, no other agent does. `sessionId` is recorded on them (provenance). */
export const RestoreSnapshotBody = z.object({ agentId: Id, sessionId: Id.optional() }).strict();
export type RestoreSnapshotBody = z.infer<typeof RestoreSnapshotBody>;

export const SnapshotParams = z.object({ userId: Id, snapshotId: Id });

/** GET /users/{u}/memories/{key}: the artifact with its (transformed) content. */
export const RetrievedMemory = ArtifactSummary.extend({
  transform: Transform,
  content: z.string(),
  /** True when the transform left part of the content out. */
  partial: z.boolean(),
  /** Line transforms: the lines kept of the content's total. */
  lines: z.object({ kept: z.number().int().nonnegative(), total: z.number().int().nonnegative() }).optional(),
});

/** GET /users/{u}/memories: newest first, without content. */
export const MemoryList = z.object({ items: z.array(ArtifactSummary), nextCursor: z.string().nullable() });

export const DeletedMemory = z.object({ key: ArtifactKey, deleted: z.literal(true) });

export const Snapshot = z.object({ snapshotId: Id, keys: z.array(ArtifactKey), createdAt: z.iso.datetime() });

export const RestoreSnapshotResult = z.object({
  snapshotId: Id,
  agentId: Id,
  /** Each artifact copied into the agent's view: its key in the snapshot and the copy's key. */
  restored: z.array(z.object({ from: ArtifactKey, key: ArtifactKey })),
  /** Keys deleted or expired since the snapshot. */
  missing: z.array(ArtifactKey),
});

/** An artifact a word search found, with its score and an excerpt (MCP search_memory). */
export const MemoryHit = ArtifactSummary.extend({ score: z.number(), excerpt: z.string() });
