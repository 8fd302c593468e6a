import type { HttpRequest } from '@azure/functions';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import {
  authorizeAgents,
  authorizeAllUsers,
  authorizeUser,
  forbidden,
  unauthorized,
  verifyApiKey,
  type ApiKeyStore,
  type Principal,
} from '../application/auth.js';
import { Id } from '../contracts/ids.js';
import { MemoryError } from '../domain/errors.js';
import type { Settings } from './config.js';

/** Turns a request's `Authorization` header into a principal, per AUTH_MODE; throws `unauthorized` (401) otherwise. */
export interface Authenticator {
  mode: Settings['AUTH_MODE'];
  authenticate(authorization: string | null | undefined): Promise<Principal>;
}

/** The principal of the open local mode and of stdio MCP: a trusted local process that may act on every user. */
export const LOCAL_PRINCIPAL: Principal = { via: 'open', subject: 'local', allUsers: true };

type AuthSettings = Pick<Settings, 'AUTH_MODE' | 'ENTRA_TENANT_ID' | 'ENTRA_AUDIENCE' | 'ENTRA_JWKS_URL' | 'ENTRA_USER_CLAIM' | 'ENTRA_ALL_USERS_ROLE'>;

export function createAuthenticator(s: AuthSettings, apiKeys: ApiKeyStore): Authenticator {
  const mode = s.AUTH_MODE;
  const entra = mode.includes('entra') ? entraVerifier(s) : undefined;
  return {
    mode,
    async authenticate(authorization) {
      if (mode === 'open') return LOCAL_PRINCIPAL;
      const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '');
      if (!match) throw unauthorized('A bearer token or API key is required (Authorization: Bearer …)');
      const credential = match[1]!;
      if (credential.startsWith('amk_') && mode.includes('apikey')) {
        const principal = await verifyApiKey(apiKeys, credential);
        if (!principal) throw unauthorized('The API key is not valid or was revoked');
        return principal;
      }
      if (entra) return entra(credential);
      throw unauthorized('The API key is not valid or was revoked');
    },
  };
}

/** Entra ID access tokens: RS256 signature against the tenant's JWKS (cached and refreshed by jose), issuer, audience, expiry. */
function entraVerifier(s: AuthSettings): (token: string) => Promise<Principal> {
  const tenant = s.ENTRA_TENANT_ID!;
  const jwks: JWTVerifyGetKey = createRemoteJWKSet(new URL(s.ENTRA_JWKS_URL ?? `https://login.microsoftonline.com/${tenant}/discovery/v2.0/keys`));
  const issuer = [`https://login.microsoftonline.com/${tenant}/v2.0`, `https://sts.windows.net/${tenant}/`];
  const audience = s.ENTRA_AUDIENCE!.split(',').map((a) => a.trim()).filter(Boolean);
  return async (token) => {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, { issuer, audience, algorithms: ['RS256'], clockTolerance: 60, requiredClaims: ['exp'] }));
    } catch (error) {
      // Key-set trouble on our side (the JWKS cannot be fetched) is not the caller's fault.
      if (error instanceof errors.JWKSTimeout || !(error instanceof errors.JOSEError)) throw new MemoryError('upstream_unavailable', 'The token signing keys cannot be fetched');
      throw unauthorized('The bearer token is not valid');
    }
    if (payload.tid !== undefined && payload.tid !== tenant) throw unauthorized('The bearer token is from another tenant');
    const base = { via: 'entra' as const, subject: typeof payload.sub === 'string' ? payload.sub : 'unknown', tenant };
    const roles = Array.isArray(payload.roles) ? payload.roles : [];
    if (roles.includes(s.ENTRA_ALL_USERS_ROLE)) return { ...base, allUsers: true };
    const userId = payload[s.ENTRA_USER_CLAIM];
    if (typeof userId !== 'string' || !Id.safeParse(userId).success) throw forbidden(`The token has neither the ${s.ENTRA_ALL_USERS_ROLE} role nor a usable ${s.ENTRA_USER_CLAIM} claim`);
    return { ...base, allUsers: false, userId };
  };
}

/**
 * How a route is guarded: `user` (the default) authenticates and, when the route has a `{userId}`, requires that user
 * (else an all-users principal); `handler` authenticates and leaves the check to the handler (operations);
 * `public` skips authentication (`/health`): such a route must read nothing per user, as its handler gets no real principal.
 */
export type Access = 'user' | 'handler' | 'public';

/** The central check of every HTTP route (shared/platform/http.ts). Path params are read raw, before validation. */
export async function authorizeRequest(req: HttpRequest, access: Access, authenticator: () => Promise<Authenticator>): Promise<Principal> {
  if (access === 'public') return LOCAL_PRINCIPAL;
  const principal = await (await authenticator()).authenticate(req.headers.get('authorization'));
  if (access === 'handler') return principal;
  const userId = req.params.userId;
  if (userId !== undefined) authorizeUser(principal, userId);
  else authorizeAllUsers(principal);
  authorizeAgents(principal, [req.query.get('agentId') ?? undefined]);
  return principal;
}

/** Agents a parsed body acts as (turns' agentId, a search's agentId, a handoff's fromAgentId): an agent-bound principal must be each. */
export function bodyAgents(body: unknown): unknown[] {
  if (typeof body !== 'object' || body === null) return [];
  const b = body as { agentId?: unknown; fromAgentId?: unknown; turns?: unknown };
  const turns = Array.isArray(b.turns) ? b.turns.map((t: unknown) => (typeof t === 'object' && t !== null ? (t as { agentId?: unknown }).agentId : undefined)) : [];
  return [b.agentId, b.fromAgentId, ...turns];
}

/** The owner of an operation is the user in its orchestration's input; one without a user (nightly) is service-only. */
export function authorizeOperation(principal: Principal, input: unknown): void {
  const userId = typeof input === 'object' && input !== null && typeof (input as { userId?: unknown }).userId === 'string' ? (input as { userId: string }).userId : undefined;
  if (userId === undefined ? !principal.allUsers : !(principal.allUsers || principal.userId === userId)) {
    // 404, not 403: operation ids are derived from user and session ids, so a 403 would confirm that one exists.
    throw new MemoryError('not_found', 'Operation was not found');
  }
}
