import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Database, SqlParameter } from '@azure/cosmos';
import { createHttpsServer } from '@vercel/cosmosdb-server';
import { ensureContainers, openCosmos } from '../../shared/adapters/cosmos/client.js';

/** One request the Cosmos SDK sent, as the wire saw it: what a cost model needs, no charge. */
export interface CosmosRequest {
  kind: 'point read' | 'query' | 'create' | 'upsert' | 'replace' | 'batch' | 'delete';
  container: string;
  /** A query or write with a partition key header is single-partition; a read by id and partition key is a point read. */
  scope: 'single-partition' | 'cross-partition' | 'point';
  /** Bytes of the request body and of the response body. */
  sent: number;
  returned: number;
  /** Rows a query page returned, operations in a batch, else 1. */
  items: number;
  status: number;
  query?: string;
  parameters?: SqlParameter[];
  /** The documents a query reads whole (their JSON sizes): the same filter run as `SELECT *`. */
  loaded?: number[];
  /** Each document written, with the one it overwrote when its id was written before. */
  writes: { doc: Record<string, unknown>; before?: Record<string, unknown> }[];
  /** A batch's read operations: the size of each document read (0: not found). */
  batchReads?: number[];
}

export const bytesOf = (value: unknown) => (value === undefined ? 0 : Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value)));

/** The wire fake runs neither the scoring functions (`FullTextScore`, `VectorDistance`, `RRF`) nor DISTINCT: the same filter, unranked, stands in. */
export const fakeCompatible = (sql: string) =>
  sql
    .replace(/\s+AND\s+FullTextContainsAny\([^)]*\)/g, '')
    .replace(/\s+ORDER BY\s+(RANK\s+)?(FullTextScore|VectorDistance|RRF)\([\s\S]*$/, '')
    .replace(/SELECT DISTINCT VALUE/, 'SELECT VALUE');

/** The same query selecting whole documents: what Cosmos DB loads to answer it, whatever it projects. */
export function loadingQuery(sql: string): string {
  const match = /^\s*SELECT\s+(TOP\s+\S+\s+)?(?:DISTINCT\s+)?(?:VALUE\s+)?[\s\S]*?\s+FROM\s+c\b/i.exec(sql);
  return match ? sql.replace(match[0], `SELECT ${match[1] ?? ''}* FROM c`) : sql;
}

const containerOf = (path: string | undefined) => /\/colls\/([^/]+)/.exec(path ?? '')?.[1] ?? '?';

/** The parts of the SDK's (hidden) plugin interface used here. */
interface PluginContext {
  operationType?: string;
  resourceType?: string;
  path?: string;
  body?: unknown;
  headers?: Record<string, unknown>;
}
interface PluginResponse {
  result?: unknown;
  code?: number;
}

/**
 * Records the item requests a Cosmos client sends, through the SDK's request plugin. Writes are remembered all along
 * (so an upsert over an earlier id is known as an overwrite); requests are recorded inside `record` only. The query
 * plan the SDK fetches before a query is not recorded: the gateway answers it.
 */
export class CosmosRequestRecorder {
  /** Every document written, in order, by container. */
  readonly written: { container: string; doc: Record<string, unknown> }[] = [];
  private readonly stored = new Map<string, Record<string, unknown>>();
  private current: CosmosRequest[] | null = null;

  /** `raw`: a database on a client without the plugin, for the loading queries. */
  constructor(private readonly raw: () => Database) {}

  readonly plugin = async (ctx: PluginContext, _diagnostics: unknown, next: (ctx: PluginContext) => Promise<PluginResponse>): Promise<PluginResponse> => {
    if (ctx.resourceType !== 'docs') return next(ctx);
    const op = ctx.operationType;
    const container = containerOf(ctx.path);
    const bodyText = typeof ctx.body === 'string' ? ctx.body : ctx.body === undefined ? undefined : JSON.stringify(ctx.body);
    const body: unknown = bodyText === undefined ? undefined : JSON.parse(bodyText);
    const spec = body !== null && typeof body === 'object' && 'query' in body ? (body as { query: string; parameters?: SqlParameter[] }) : undefined;
    if (spec) ctx.body = JSON.stringify({ ...spec, query: fakeCompatible(spec.query) });
    const into = spec !== undefined && op !== 'query' ? null : this.current;
    let response: PluginResponse | undefined;
    let status = 200;
    try {
      response = await next(ctx);
      status = response.code ?? 200;
      return response;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      status = typeof code === 'number' ? code : 500;
      throw error;
    } finally {
      const docs: Record<string, unknown>[] = [];
      if ((op === 'create' || op === 'upsert' || op === 'replace') && status < 300) docs.push(body as Record<string, unknown>);
      if (op === 'batch' && status < 300) for (const o of body as { resourceBody?: Record<string, unknown> }[]) if (o.resourceBody) docs.push(o.resourceBody);
      const writes = docs.map((doc) => this.remember(container, doc));
      if (into) {
        const partitionKey = ctx.headers?.['x-ms-documentdb-partitionkey'];
        const request: CosmosRequest = {
          kind: op === 'read' ? 'point read' : (op as CosmosRequest['kind']),
          container,
          scope: op === 'read' ? 'point' : partitionKey === undefined ? 'cross-partition' : 'single-partition',
          sent: bodyText === undefined ? 0 : Buffer.byteLength(bodyText),
          returned: bytesOf(response?.result),
          items: op === 'query' ? ((response?.result as { Documents?: unknown[] } | undefined)?.Documents?.length ?? 0) : op === 'batch' ? writes.length : 1,
          status,
          writes,
        };
        if (op === 'batch') {
          const results = (response?.result ?? []) as { resourceBody?: unknown }[];
          const reads = (body as { operationType?: string }[]).flatMap((o, i) => (o.operationType === 'Read' ? [bytesOf(results[i]?.resourceBody)] : []));
          if (reads.length > 0) request.batchReads = reads;
        }
        if (spec) {
          const parameters = spec.parameters ?? [];
          const pk = typeof partitionKey === 'string' ? (JSON.parse(partitionKey) as string[])[0] : undefined;
          Object.assign(request, { query: spec.query, parameters, loaded: await this.loaded(container, spec.query, parameters, pk) });
        }
        into.push(request);
      }
    }
  };

  /** The requests `fn` makes. */
  async record(fn: () => Promise<unknown>): Promise<CosmosRequest[]> {
    const requests: CosmosRequest[] = [];
    this.current = requests;
    try {
      await fn();
    } finally {
      this.current = null;
    }
    return requests;
  }

  private remember(container: string, doc: Record<string, unknown>) {
    const key = `${container}|${String(doc.userId)}|${String(doc.id)}`;
    const before = this.stored.get(key);
    this.stored.set(key, doc);
    this.written.push({ container, doc });
    return before ? { doc, before } : { doc };
  }

  private async loaded(container: string, sql: string, parameters: SqlParameter[], partitionKey: string | undefined): Promise<number[]> {
    const spec = { query: loadingQuery(fakeCompatible(sql)), parameters };
    const { resources } = await this.raw().container(container).items.query<unknown>(spec, partitionKey === undefined ? {} : { partitionKey }).fetchAll();
    return resources.map(bytesOf);
  }
}

/**
 * A wire fake with every container of `containerDefinitions(dimensions)`, and a database on a client whose requests
 * `recorder` sees. `close` stops both clients and the server.
 */
export async function openRecordedCosmos(dimensions: number): Promise<{ database: Database; recorder: CosmosRequestRecorder; close: () => Promise<void> }> {
  const server = createHttpsServer({ keepAlive: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const connection = { endpoint: `https://127.0.0.1:${(server.address() as AddressInfo).port}/`, key: 'fake-key', databaseName: 'agent_memory' };
  const tls = { agent: new https.Agent({ rejectUnauthorized: false, keepAlive: true }), connectionPolicy: { enableEndpointDiscovery: false } };
  const raw = await openCosmos({ ...connection, clientOptions: tls });
  await ensureContainers(raw.database, dimensions);
  const recorder = new CosmosRequestRecorder(() => raw.database);
  // `plugins` is a CosmosClientOptions field the SDK marks hidden: it sees every request the client sends.
  const recorded = await openCosmos({ ...connection, clientOptions: { ...tls, plugins: [{ on: 'request', plugin: recorder.plugin }] } as typeof tls });
  return {
    database: recorded.database,
    recorder,
    close: async () => {
      recorded.client.dispose();
      raw.client.dispose();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
