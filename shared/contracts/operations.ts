import { createHash } from 'node:crypto';
import { z } from 'zod';
import { Id } from './ids.js';

/**
 * Operations: the durable orchestrations a request starts (session end, long-term reflection, nightly consolidation).
 * The operation id the API returns is the orchestration's instance id.
 */

/** Durable's limit on an instance id (the Storage task hub keys its tables on it). */
export const MAX_INSTANCE_ID_LENGTH = 256;

/** An operation id as the API accepts it (`GET /operations/{id}`). */
export const OperationId = z.string().regex(new RegExp(`^[A-Za-z0-9._:-]{1,${MAX_INSTANCE_ID_LENGTH}}$`));

/** What a request that starts (or finds) an operation answers: 202 with the orchestration's instance id. */
export const OperationAccepted = z.object({ operationId: z.string() });
export type OperationAccepted = z.infer<typeof OperationAccepted>;

/**
 * Where a running operation is: its orchestrator's custom status (only the forget sets one). Ids, numbers and times
 * only, never memory text: a forget purging in its `round`, or in its `grace` wait until `until`.
 */
export const OperationProgress = z.object({ step: z.enum(['purging', 'grace']), round: z.number().int().positive(), until: z.iso.datetime().optional() });
export type OperationProgress = z.infer<typeof OperationProgress>;

/**
 * The `progress` of an orchestrator's custom status: none when it set none, or one this version does not know (an
 * orchestrator of another deployment still running, or the empty status some hosts report): a status read never fails
 * on it.
 */
export function progressOf(customStatus: unknown): { progress?: OperationProgress } {
  const parsed = OperationProgress.safeParse(customStatus);
  return parsed.success ? { progress: parsed.data } : {};
}

/** GET /operations/{id} */
export const OperationStatus = z.object({
  operationId: z.string(),
  name: z.string(),
  status: z.enum(['pending', 'running', 'completed', 'failed']),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  /** The last one the orchestrator set; a finished operation keeps it, as the Durable extension does. */
  progress: OperationProgress.optional(),
  output: z.unknown().optional(),
  error: z.string().optional(),
});
export type OperationStatus = z.infer<typeof OperationStatus>;

/** The orchestrations' names (functions/orch-*.ts). */
export const ORCHESTRATIONS = {
  sessionEnd: 'orch-session-end',
  longTermReflection: 'orch-long-term-reflection',
  nightlyConsolidation: 'orch-nightly-consolidation',
  forget: 'orch-forget',
} as const;
export type OrchestrationName = (typeof ORCHESTRATIONS)[keyof typeof ORCHESTRATIONS];

/** The orchestrations' inputs. */
export const SessionEndInput = z.object({ userId: Id, sessionId: Id });
export type SessionEndInput = z.infer<typeof SessionEndInput>;
export const LongTermReflectionInput = z.object({ userId: Id });
export type LongTermReflectionInput = z.infer<typeof LongTermReflectionInput>;
export const NightlyInput = z.object({ since: z.iso.datetime(), runId: z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/), parallelism: z.number().int().min(1).max(64) });
export type NightlyInput = z.infer<typeof NightlyInput>;
/** Forget a user (no `sessionId`) or one session of the user. */
export const ForgetInput = z.object({ userId: Id, sessionId: Id.optional() });
export type ForgetInput = z.infer<typeof ForgetInput>;

/**
 * An instance id derived from what the orchestration acts on, so starting twice is harmless. The readable form
 * `<prefix>:<part>:<part>` is kept when it fits in {@link MAX_INSTANCE_ID_LENGTH} and reads back one way only (no part
 * but the last contains `:`, which ids may hold); otherwise it is `<prefix>:<sha256 hex of the parts>`, stable for the
 * same parts. For two or more parts the forms never meet: a hashed id has one `:`, a readable one at least two.
 */
export function instanceId(prefix: string, ...parts: [string, ...string[]]): string {
  const readable = `${prefix}:${parts.join(':')}`;
  const unambiguous = parts.slice(0, -1).every((p) => !p.includes(':'));
  if (unambiguous && readable.length <= MAX_INSTANCE_ID_LENGTH) return readable;
  // `\n` is in no id, so the joined key reads back one way.
  return `${prefix}:${createHash('sha256').update(parts.join('\n')).digest('hex')}`;
}

export const sessionEndInstanceId = (userId: string, sessionId: string) => instanceId('session-end', userId, sessionId);
export const reflectionInstanceId = (userId: string, runId: string) => instanceId('reflection', userId, runId);
export const nightlyInstanceId = (runId: string) => instanceId('nightly', runId);
/** `forget-user:<user>` or `forget-session:<user>:<session>`: one operation per scope, so a repeated DELETE finds it. */
export const forgetInstanceId = (userId: string, sessionId?: string) => (sessionId === undefined ? instanceId('forget-user', userId) : instanceId('forget-session', userId, sessionId));
