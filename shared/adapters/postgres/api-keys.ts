import { conflict } from '../../domain/errors.js';
import type { ApiKeyRecord, ApiKeyStore } from '../../application/auth.js';
import type { Db } from './db.js';

interface Row {
  key_id: string;
  key_hash: string;
  user_id: string | null;
  agent_id: string | null;
  label: string | null;
  created_at: Date | string;
  revoked_at: Date | string | null;
}

const iso = (v: Date | string) => new Date(v).toISOString();

const toRecord = (r: Row): ApiKeyRecord => ({
  keyId: r.key_id,
  hash: r.key_hash,
  ...(r.user_id !== null && { userId: r.user_id }),
  ...(r.agent_id !== null && { agentId: r.agent_id }),
  ...(r.label !== null && { label: r.label }),
  createdAt: iso(r.created_at),
  ...(r.revoked_at !== null && { revokedAt: iso(r.revoked_at) }),
});

/** API keys in PostgreSQL (migration 13): hashes only. */
export class PostgresApiKeyStore implements ApiKeyStore {
  constructor(private readonly db: Db) {}

  async create(record: ApiKeyRecord): Promise<void> {
    const rows = await this.db.query(
      `INSERT INTO api_keys (key_id, key_hash, user_id, agent_id, label, created_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (key_id) DO NOTHING RETURNING key_id`,
      [record.keyId, record.hash, record.userId ?? null, record.agentId ?? null, record.label ?? null, record.createdAt],
    );
    if (rows.length === 0) throw conflict(`API key ${record.keyId} exists`);
  }

  async get(keyId: string): Promise<ApiKeyRecord | null> {
    const [row] = await this.db.query<Row>('SELECT * FROM api_keys WHERE key_id = $1', [keyId]);
    return row ? toRecord(row) : null;
  }

  async revoke(keyId: string, at: Date): Promise<boolean> {
    const rows = await this.db.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE key_id = $1 RETURNING key_id', [keyId, at.toISOString()]);
    return rows.length > 0;
  }

  async list(): Promise<ApiKeyRecord[]> {
    return (await this.db.query<Row>('SELECT * FROM api_keys ORDER BY created_at DESC, key_id')).map(toRecord);
  }
}
