import { describe, expect, it } from 'vitest';
import type { DetailMemory } from '../../../shared/application/artifact-ports.js';
import { expandFirstUse, visibleMemoryRefs } from '../../../shared/application/context-refs.js';
import type { ArtifactRecord } from '../../../shared/contracts/artifacts.js';
import { turn } from '../../support/builders.js';
import { artifact as storedArtifact } from '../../integration/artifact-store-contract.js';

const artifact = (userId: string, key: string, overrides: Partial<ArtifactRecord>): ArtifactRecord => storedArtifact(userId, key, { tokens: 900, bytes: 1000, ...overrides });

/** Detail memory holding alice's artifacts (point reads only). */
const detailWith = (records: ArtifactRecord[]) =>
  ({
    artifacts: { get: async (userId: string, key: string) => records.find((r) => r.userId === userId && r.key === key) ?? null },
    blobs: null,
    limits: { offloadThresholdTokens: 500, inlineMaxBytes: 1000, maxBytes: 10_000 },
  }) as unknown as DetailMemory;

const ref = (key: string) => ({ key, description: `about ${key}`, tokens: 900, bytes: 1000 });
const detail = detailWith([
  artifact('alice', 'mine', { scope: 'private', agentId: 'researcher', storage: { kind: 'inline', content: 'the full output' } }),
  artifact('alice', 'everyone', { scope: 'user' }),
]);

describe('context references and the viewer', () => {
  it('given a first-use turn whose artifact the viewer may not see, leaves the placeholder', async () => {
    const turns = [turn(1, '[MemoryRef: mine - …]', { role: 'tool', memoryRef: ref('mine') })];
    expect((await expandFirstUse(detail, 'alice', turns, new Date(), { userId: 'alice', agentId: 'writer' })).expandedSeq).toBeUndefined();
    const own = await expandFirstUse(detail, 'alice', turns, new Date(), { userId: 'alice', agentId: 'researcher' });
    expect(own.expandedSeq).toBe(1);
    expect(own.turns[0]!.data.content).toBe('the full output');
    // Without a viewer: every artifact of the user (the behaviour before scopes).
    expect((await expandFirstUse(detail, 'alice', turns, new Date())).expandedSeq).toBe(1);
  });

  it('keeps only the references the viewer may see', async () => {
    const refs = ['mine', 'everyone', 'gone'].map((key, i) => ({ key, tokens: 900, description: `about ${key}`, seq: i + 1, turnId: `t${i}` }));
    expect((await visibleMemoryRefs(detail, { userId: 'alice', agentId: 'writer' }, refs)).map((r) => r.key)).toEqual(['everyone']);
    expect((await visibleMemoryRefs(detail, { userId: 'alice', agentId: 'researcher' }, refs)).map((r) => r.key)).toEqual(['mine', 'everyone']);
  });
});
