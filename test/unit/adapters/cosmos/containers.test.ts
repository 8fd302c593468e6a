import { describe, expect, it } from 'vitest';
import { COSMOS_CONTAINERS, containerDefinitions } from '../../../../shared/adapters/cosmos/containers.js';

const byId = (dimensions: number) => new Map(containerDefinitions(dimensions).map((d) => [d.id, d]));

describe('Cosmos container definitions', () => {
  it('declares the containers of the architecture, the slots, the forget tombstones, the projection queue and the API keys, partitioned by user except the API keys and the leases', () => {
    const defs = byId(384);
    expect([...defs.keys()]).toEqual(['events', 'sessions', 'interactions', 'insights', 'artifacts', 'slots', 'forgets', 'projectionQueue', 'apiKeys', 'leases']);
    for (const [id, def] of defs) expect(def.partitionKey?.paths).toEqual([id === 'leases' || id === 'apiKeys' ? '/id' : '/userId']);
  });

  it('gives every vector path a cosine float32 embedding of the configured size, a DiskANN index and no range index', () => {
    for (const dimensions of [3, 512]) {
      for (const def of containerDefinitions(dimensions)) {
        const vectorPaths = COSMOS_CONTAINERS[def.id as keyof typeof COSMOS_CONTAINERS].vectorPaths;
        expect(def.vectorEmbeddingPolicy?.vectorEmbeddings ?? []).toEqual(
          vectorPaths.map((path) => ({ path, dataType: 'float32', distanceFunction: 'cosine', dimensions })),
        );
        expect(def.indexingPolicy?.vectorIndexes ?? []).toEqual(vectorPaths.map((path) => ({ path, type: 'diskANN' })));
        const excluded = def.indexingPolicy?.excludedPaths?.map((p) => p.path) ?? [];
        for (const path of vectorPaths) expect(excluded).toContain(`${path}/*`);
      }
    }
    expect(byId(3).get('interactions')?.vectorEmbeddingPolicy?.vectorEmbeddings.map((v) => v.path)).toEqual(['/contentVector', '/summaryVector']);
    expect(byId(3).get('artifacts')?.vectorEmbeddingPolicy).toBeUndefined();
  });

  it('indexes the text fields for full-text search in English', () => {
    const defs = byId(8);
    expect(defs.get('interactions')?.fullTextPolicy).toEqual({
      defaultLanguage: 'en-US',
      fullTextPaths: ['/content', '/summary'].map((path) => ({ path, language: 'en-US' })),
    });
    for (const def of defs.values()) {
      expect(def.indexingPolicy?.fullTextIndexes ?? []).toEqual((def.fullTextPolicy?.fullTextPaths ?? []).map(({ path }) => ({ path })));
    }
    expect(defs.get('insights')?.fullTextPolicy?.fullTextPaths.map((p) => p.path)).toEqual(['/text']);
    expect(defs.get('events')?.fullTextPolicy).toBeUndefined();
  });

  it('turns per-item TTL on for every memory container and leaves the leases alone', () => {
    const defs = byId(8);
    for (const id of ['events', 'sessions', 'interactions', 'insights', 'artifacts']) expect(defs.get(id)?.defaultTtl).toBe(-1);
    expect(defs.get('leases')?.defaultTtl).toBeUndefined();
    expect(defs.get('forgets')?.defaultTtl).toBeUndefined();
  });

  it('keeps no unique key on events (session events carry no turnId)', () => {
    expect(byId(8).get('events')?.uniqueKeyPolicy).toBeUndefined();
  });

  it('rejects dimensions that are not a positive integer', () => {
    expect(() => containerDefinitions(0)).toThrow(RangeError);
    expect(() => containerDefinitions(1.5)).toThrow(RangeError);
  });
});
