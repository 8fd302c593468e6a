import { describe, expect, it } from 'vitest';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresSearchIndex } from '../../shared/adapters/postgres/search.js';
import { postgresStores } from '../../shared/adapters/postgres/stores.js';
import { vectorAt, vectorsParam } from '../../shared/adapters/postgres/vector-params.js';
import type { InteractionDocument } from '../../shared/contracts/interactions.js';
import { rng } from '../support/random.js';

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();

/**
 * Doubles of every magnitude and sign, with full 53-bit mantissas (as a model's output parsed from JSON), so each is
 * rounded on its way to float4. (A double exactly halfway between two float4s may round the other way from its decimal
 * text; model outputs are not such ties.)
 */
function vectors(count: number, dims: number, seed: number): number[][] {
  const random = rng(seed);
  return Array.from({ length: count }, () => Array.from({ length: dims }, () => Math.sin(1e4 * random()) * 10 ** Math.floor(random() * 8 - 5)));
}

describe('vectors sent as one binary float4[] parameter', () => {
  it('slices each vector out whatever the sizes, and keeps other float4[] parameters as they were', async () => {
    const db = await openPglite(undefined);
    await migrate(db);
    const given = [[0.1, -2.5, 1 / 3], [Math.PI], vectors(1, 700, 1)[0]!, [1e-7, 0]];
    const p = vectorsParam(given);
    const rows = await db.query<{ binary: string; text: string }>(
      `SELECT ${vectorAt('$1', 'o', 's')}::text AS binary, (($4::text[])[n])::vector::text AS text FROM unnest($2::int[], $3::int[]) WITH ORDINALITY AS r(o, s, n) ORDER BY n`,
      [p.values, p.offsets, p.sizes, given.map((v) => JSON.stringify(v))],
    );
    expect(rows.map((r) => r.binary)).toEqual(rows.map((r) => r.text));
    expect(rows.map((r) => (JSON.parse(r.binary) as number[]).map(Math.fround))).toEqual(given.map((v) => v.map(Math.fround)));
    const [plain] = await db.query<{ t: string }>('SELECT $1::float4[]::text AS t', [[1.5, -2]]);
    expect(plain!.t).toBe('{1.5,-2}');
    await db.close();
  }, 60_000);

  it('stores the turn index and interaction vectors as their decimal text would have (the same float4s)', async () => {
    const db = await openPglite(undefined);
    await migrate(db);
    const search = new PostgresSearchIndex(db);
    const stores = postgresStores(db);
    const turnVectors = vectors(12, 16, 2);
    await search.indexTurns(
      turnVectors.map((vector, i) => ({
        userId: 'u',
        sessionId: `s${i % 3}`,
        seq: i + 1,
        turnId: `t${i}`,
        speaker: 'user',
        text: `user: turn ${i}`,
        matchText: `turn ${i}`,
        timestamp: at(i),
        embeddingModel: 'm',
        vector,
      })),
    );
    const windowVectors = vectors(6, 16, 3);
    await stores.interactions.upsert(
      [0, 1, 2].map(
        (i): InteractionDocument => ({
          schemaVersion: 1,
          id: `w${i}`,
          userId: 'u',
          sessionId: 's0',
          agentIds: [],
          turnIds: [`t${i}`],
          seqRange: [i + 1, i + 1],
          startedAt: at(i),
          endedAt: at(i),
          content: `window ${i}`,
          summary: `summary ${i}`,
          topics: [],
          entities: [],
          embeddingModel: 'm',
          contentVector: windowVectors[2 * i]!,
          summaryVector: windowVectors[2 * i + 1]!,
          createdAt: at(i),
        }),
      ),
    );
    const asText = async (vs: number[][]) =>
      (await db.query<{ v: string }>('SELECT v::vector::text AS v FROM unnest($1::text[]) WITH ORDINALITY AS r(v, n) ORDER BY n', [vs.map((v) => JSON.stringify(v))])).map((r) => r.v);
    const turns = await db.query<{ v: string }>(`SELECT vector::text AS v FROM memory_turns ORDER BY seq`);
    expect(turns.map((r) => r.v)).toEqual(await asText(turnVectors));
    const windows = await db.query<{ c: string; s: string }>(`SELECT content_vector::text AS c, summary_vector::text AS s FROM interactions ORDER BY from_seq`);
    expect(windows.flatMap((r) => [r.c, r.s])).toEqual(await asText(windowVectors));
    await db.close();
  }, 60_000);
});
