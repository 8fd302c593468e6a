import { parseArgs } from 'node:util';
import { createApiKey, type ApiKeyStore } from '../application/auth.js';
import { Id } from '../contracts/ids.js';
import { openApiKeyStore } from './composition.js';

const USAGE = `Usage:
  npm run keys -- create --user <userId> [--agent <agentId>] [--label <text>]   a key for one user (optionally one agent)
  npm run keys -- create --all-users [--label <text>]                          a service key for every user
  npm run keys -- revoke <keyId>
  npm run keys -- list`;

/**
 * The API key commands on a store. Returns the lines to print; the key itself appears once, in the line of `create`.
 * Keys are kept as SHA-256 hashes, so a lost key cannot be shown again: revoke it and create another.
 */
export async function keysCommand(store: ApiKeyStore, argv: readonly string[], now = new Date()): Promise<string[]> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: { user: { type: 'string' }, agent: { type: 'string' }, label: { type: 'string' }, 'all-users': { type: 'boolean' } },
  });
  const [command, ...rest] = positionals;
  switch (command) {
    case 'create': {
      const allUsers = values['all-users'] === true;
      if (allUsers === (values.user !== undefined)) throw new Error(`create needs exactly one of --user <userId> or --all-users\n${USAGE}`);
      if (allUsers && values.agent !== undefined) throw new Error('--agent binds a user key to one agent; a service key (--all-users) takes none');
      for (const [name, value] of [['--user', values.user], ['--agent', values.agent]] as const) {
        if (value !== undefined && !Id.safeParse(value).success) throw new Error(`${name} must be an id ([A-Za-z0-9._:-], 1-128 characters)`);
      }
      const { key, record } = await createApiKey(store, { ...(values.user !== undefined && { userId: values.user }), ...(values.agent !== undefined && { agentId: values.agent }), ...(values.label !== undefined && { label: values.label }) }, now);
      return [
        `Created key ${record.keyId} for ${record.userId === undefined ? 'all users' : `user ${record.userId}`}${record.agentId === undefined ? '' : `, agent ${record.agentId}`}.`,
        `Key (shown once; send it as "Authorization: Bearer <key>"):`,
        key,
      ];
    }
    case 'revoke': {
      const [keyId] = rest;
      if (!keyId || rest.length > 1) throw new Error(`revoke takes one keyId\n${USAGE}`);
      if (!(await store.revoke(keyId, now))) throw new Error(`No key ${keyId}`);
      return [`Revoked key ${keyId}.`];
    }
    case 'list': {
      const keys = await store.list();
      if (keys.length === 0) return ['No API keys.'];
      return keys.map(
        (k) =>
          `${k.keyId}  ${k.userId === undefined ? 'all users' : `user ${k.userId}`}${k.agentId === undefined ? '' : ` agent ${k.agentId}`}  created ${k.createdAt}` +
          `${k.revokedAt === undefined ? '' : `  REVOKED ${k.revokedAt}`}${k.label === undefined ? '' : `  "${k.label}"`}`,
      );
    }
    default:
      throw new Error(USAGE);
  }
}

// `npm run keys -- …`: on the configured store (PGlite by default: stop a local host on the same folder first, PGlite is single-process).
if (import.meta.url === `file://${process.argv[1]}`) {
  const { apiKeys, close } = await openApiKeyStore();
  try {
    for (const line of await keysCommand(apiKeys, process.argv.slice(2))) console.log(line);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  } finally {
    await close();
  }
}
