import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';

export const TENANT = '11111111-2222-3333-4444-555555555555';
export const AUDIENCE = 'api://agent-memory-test';
export const ISSUER = `https://login.microsoftonline.com/${TENANT}/v2.0`;

/**
 * A stand-in for the tenant's signing keys: an RS256 key pair made by the test, its public half served as a JWKS by a
 * local HTTP server (no network), and a signer for tokens shaped like Entra ID access tokens.
 */
export async function startTestJwks(): Promise<{
  url: string;
  settings: Record<string, string>;
  sign: (claims: JWTPayload, options?: { expiresIn?: string | number; issuer?: string; audience?: string; key?: 'trusted' | 'stranger' }) => Promise<string>;
  /** How many times the key set was fetched. */
  fetches: () => number;
  close: () => Promise<void>;
}> {
  const trusted = await generateKeyPair('RS256', { extractable: true });
  const stranger = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(trusted.publicKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };
  let fetches = 0;
  const server: Server = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/discovery/v2.0/keys`;
  const sign = async (claims: JWTPayload, options: { expiresIn?: string | number; issuer?: string; audience?: string; key?: 'trusted' | 'stranger' } = {}) => {
    const key: CryptoKey = options.key === 'stranger' ? stranger.privateKey : trusted.privateKey;
    return new SignJWT({ tid: TENANT, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: 'test-key-1', typ: 'JWT' })
      .setIssuer(options.issuer ?? ISSUER)
      .setAudience(options.audience ?? AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(options.expiresIn ?? '10m')
      .sign(key);
  };
  return {
    url,
    settings: { ENTRA_TENANT_ID: TENANT, ENTRA_AUDIENCE: `${AUDIENCE},00000000-aaaa-bbbb-cccc-000000000000`, ENTRA_JWKS_URL: url },
    sign,
    fetches: () => fetches,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
