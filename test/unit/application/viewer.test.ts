import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../shared/application/auth.js';
import { isAdmin, viewerFor } from '../../../shared/application/viewer.js';
import type { Deps } from '../../../shared/application/ports.js';
import type { SessionDocument } from '../../../shared/contracts/sessions.js';

const handoff = (toAgentId: string, memoryKeys: string[], seq: number) => ({ seq, handoffId: `h${seq}`, fromAgentId: 'researcher', toAgentId, memoryKeys, at: '2026-01-05T10:00:00.000Z' });

/** A session store holding one document for alice's session s1, with two handoffs to the writer and one to the editor. */
function sessionsWith(handoffs = [handoff('writer', ['k1', 'k2'], 3), handoff('editor', ['k3'], 5), handoff('writer', ['k4'], 7)]) {
  const reads: string[] = [];
  return {
    reads,
    events: { read: async () => [] } as unknown as Deps['events'],
    sessions: {
      get: async (key: { userId: string; sessionId: string }) => {
        reads.push(`${key.userId}/${key.sessionId}`);
        return key.userId === 'alice' && key.sessionId === 's1' ? { doc: { userId: 'alice', sessionId: 's1', handoffs } as unknown as SessionDocument, version: '1' } : null;
      },
    },
  };
}

const user: Principal = { via: 'apikey', subject: 'key:alice', allUsers: false, userId: 'alice' };
const writerKey: Principal = { ...user, agentId: 'writer' };
const service: Principal = { via: 'apikey', subject: 'key:svc', allUsers: true };

describe('viewerFor', () => {
  it('given an agent and a session, grants the keys handed to that agent in that session', async () => {
    const deps = sessionsWith();
    expect(await viewerFor(deps, user, { userId: 'alice', agentId: 'writer', sessionId: 's1' })).toEqual({ userId: 'alice', agentId: 'writer', sessionId: 's1', grants: new Set(['k1', 'k2', 'k4']) });
    expect((await viewerFor(deps, user, { userId: 'alice', agentId: 'editor', sessionId: 's1' })).grants).toEqual(new Set(['k3']));
    expect((await viewerFor(deps, user, { userId: 'alice', agentId: 'planner', sessionId: 's1' })).grants).toEqual(new Set());
  });

  it('grants a private slot of the sender that a handoff names as slot:<name>, and only the sender\'s', async () => {
    const deps = sessionsWith([handoff('writer', ['slot:notes', 'k1'], 3)]);
    expect((await viewerFor(deps, user, { userId: 'alice', agentId: 'writer', sessionId: 's1' })).grants).toEqual(new Set(['slot:researcher/notes', 'k1']));
  });

  it('given an agent-bound principal and no agentId, reads as the bound agent', async () => {
    expect(await viewerFor(sessionsWith(), writerKey, { userId: 'alice', sessionId: 's1' })).toMatchObject({ agentId: 'writer', grants: new Set(['k1', 'k2', 'k4']) });
  });

  it('given an agent-bound principal naming another agent, refuses (403)', async () => {
    await expect(viewerFor(sessionsWith(), writerKey, { userId: 'alice', agentId: 'researcher' })).rejects.toMatchObject({ code: 'forbidden' });
  });

  it('given no agent, or no session, reads no session document and grants nothing', async () => {
    const deps = sessionsWith();
    expect(await viewerFor(deps, user, { userId: 'alice', sessionId: 's1' })).toEqual({ userId: 'alice', sessionId: 's1' });
    expect(await viewerFor(deps, user, { userId: 'alice', agentId: 'writer' })).toEqual({ userId: 'alice', agentId: 'writer' });
    expect(await viewerFor(deps, service, { userId: 'alice' })).toEqual({ userId: 'alice' });
    expect(deps.reads).toEqual([]);
  });

  it('given a session that does not exist, grants nothing', async () => {
    expect(await viewerFor(sessionsWith(), user, { userId: 'alice', agentId: 'writer', sessionId: 'nope' })).toEqual({ userId: 'alice', agentId: 'writer', sessionId: 'nope', grants: new Set() });
  });
});

describe('isAdmin', () => {
  it('is an all-users principal bound to no agent', () => {
    expect(isAdmin(service)).toBe(true);
    expect(isAdmin({ ...service, agentId: 'indexer' })).toBe(false);
    expect(isAdmin(user)).toBe(false);
  });
});
