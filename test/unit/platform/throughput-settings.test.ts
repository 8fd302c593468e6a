import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadSettings, modelThreads, projectionParallelism } from '../../../shared/platform/config.js';

describe('throughput settings: defaults follow the provider and the machine', () => {
  const hosted = { MODEL_PROVIDER: 'openai', OPENAI_API_KEY: 'k' };

  it('given no setting, then the offline models project 4 sessions at once on every core, hosted ones 32 with one parse thread', () => {
    const offline = loadSettings({});
    expect(projectionParallelism(offline)).toBe(4);
    expect(modelThreads(offline)).toBe(os.availableParallelism());
    expect(projectionParallelism(loadSettings(hosted))).toBe(32);
    expect(modelThreads(loadSettings(hosted))).toBe(1);
  });

  it('given the settings, then they win; a malformed one stops the start naming it', () => {
    const s = loadSettings({ ...hosted, PROJECTION_PARALLELISM: '64', MODEL_THREADS: '3', EMBEDDING_BATCH_TEXTS: '100', EMBEDDING_CONCURRENCY: '2' });
    expect([projectionParallelism(s), modelThreads(s), s.EMBEDDING_BATCH_TEXTS, s.EMBEDDING_CONCURRENCY]).toEqual([64, 3, 100, 2]);
    expect(() => loadSettings({ MODEL_THREADS: '0' })).toThrow(/MODEL_THREADS/);
    expect(() => loadSettings({ EMBEDDING_BATCH_TEXTS: 'many' })).toThrow(/EMBEDDING_BATCH_TEXTS/);
  });
});
