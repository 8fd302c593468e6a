import type { Db } from '../../adapters/postgres/db.js';

/** One history event as the Durable replay engine reads it (PascalCase wire shape). */
export type HistoryEvent = { EventType: number; EventId: number; Timestamp: string; IsPlayed: boolean } & Record<string, unknown>;

export interface InstanceState {
  instanceId: string;
  name: string;
  status: 'pending' | 'running' | 'completed' | 'failed';
  input: unknown;
  output?: unknown;
  error?: string;
  /** What the orchestrator last passed to `setCustomStatus` (the operation's `progress`). */
  customStatus?: unknown;
  history: HistoryEvent[];
  /** Actions of the replay already executed; their events are in `history`. */
  actionCount: number;
  parentId?: string;
  createdAt: string;
  updatedAt: string;
}

/** Where the local durable runner keeps instances: PostgreSQL (migrations 3 and 23) so a restart resumes, or memory. */
export interface DurableStateStore {
  /** Inserts a new instance; false when one with this id exists. */
  create(state: InstanceState): Promise<boolean>;
  get(instanceId: string): Promise<InstanceState | null>;
  save(state: InstanceState): Promise<void>;
  /** Pending and running instances, oldest first. */
  unfinished(): Promise<InstanceState[]>;
  /** Deletes a finished instance (completed or failed); false when there is none. */
  deleteFinished(instanceId: string): Promise<boolean>;
}

export class MemoryDurableStateStore implements DurableStateStore {
  private readonly states = new Map<string, string>();

  async create(state: InstanceState): Promise<boolean> {
    if (this.states.has(state.instanceId)) return false;
    this.states.set(state.instanceId, JSON.stringify(state));
    return true;
  }

  async get(instanceId: string): Promise<InstanceState | null> {
    const found = this.states.get(instanceId);
    return found ? (JSON.parse(found) as InstanceState) : null;
  }

  async save(state: InstanceState): Promise<void> {
    this.states.set(state.instanceId, JSON.stringify(state));
  }

  async deleteFinished(instanceId: string): Promise<boolean> {
    const found = await this.get(instanceId);
    if (!found || found.status === 'pending' || found.status === 'running') return false;
    return this.states.delete(instanceId);
  }

  async unfinished(): Promise<InstanceState[]> {
    return [...this.states.values()].map((s) => JSON.parse(s) as InstanceState).filter((s) => s.status === 'pending' || s.status === 'running');
  }
}

interface Row {
  instance_id: string;
  name: string;
  status: InstanceState['status'];
  input: unknown;
  output: unknown;
  error: string | null;
  custom_status: unknown;
  history: HistoryEvent[];
  action_count: number;
  parent_id: string | null;
  created_at: string | Date;
  updated_at: string | Date;
}

const fromRow = (r: Row): InstanceState => ({
  instanceId: r.instance_id,
  name: r.name,
  status: r.status,
  input: r.input,
  ...(r.output !== null && r.output !== undefined && { output: r.output }),
  ...(r.error !== null && { error: r.error }),
  ...(r.custom_status !== null && { customStatus: r.custom_status }),
  history: r.history,
  actionCount: r.action_count,
  ...(r.parent_id !== null && { parentId: r.parent_id }),
  createdAt: new Date(r.created_at).toISOString(),
  updatedAt: new Date(r.updated_at).toISOString(),
});

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

export class PostgresDurableStateStore implements DurableStateStore {
  constructor(private readonly db: Db) {}

  async create(s: InstanceState): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO durable_instances (instance_id, name, status, input, output, error, history, action_count, parent_id, created_at, updated_at)
       VALUES ($1, $2, $3, $4, NULL, NULL, $5, $6, $7, $8, $9) ON CONFLICT (instance_id) DO NOTHING RETURNING instance_id`,
      [s.instanceId, s.name, s.status, JSON.stringify(s.input ?? null), JSON.stringify(s.history), s.actionCount, s.parentId ?? null, s.createdAt, s.updatedAt],
    );
    return rows.length === 1;
  }

  async get(instanceId: string): Promise<InstanceState | null> {
    const [row] = await this.db.query<Row>('SELECT * FROM durable_instances WHERE instance_id = $1', [instanceId]);
    return row ? fromRow(row) : null;
  }

  async save(s: InstanceState): Promise<void> {
    await this.db.query(
      `UPDATE durable_instances SET name = $2, status = $3, input = $4, output = $5, error = $6, history = $7, action_count = $8, updated_at = $9,
       custom_status = $10 WHERE instance_id = $1`,
      [s.instanceId, s.name, s.status, JSON.stringify(s.input ?? null), json(s.output), s.error ?? null, JSON.stringify(s.history), s.actionCount, s.updatedAt, json(s.customStatus)],
    );
  }

  async deleteFinished(instanceId: string): Promise<boolean> {
    const rows = await this.db.query("DELETE FROM durable_instances WHERE instance_id = $1 AND status IN ('completed', 'failed') RETURNING 1", [instanceId]);
    return rows.length === 1;
  }

  async unfinished(): Promise<InstanceState[]> {
    const rows = await this.db.query<Row>("SELECT * FROM durable_instances WHERE status IN ('pending', 'running') ORDER BY created_at");
    return rows.map(fromRow);
  }
}
