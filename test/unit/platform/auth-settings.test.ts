import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadSettings } from '../../../shared/platform/config.js';
import { assertOpenOnlyOnLoopback } from '../../../shared/platform/local-host/host.js';

describe('AUTH_MODE: a safe default per host', () => {
  afterEach(() => vi.restoreAllMocks());

  it('outside the Functions host, unset means open', () => {
    expect(loadSettings({}).AUTH_MODE).toBe('open');
  });

  it('under the Functions host (Azure or func start), unset or open refuses to load', () => {
    for (const host of [{ WEBSITE_INSTANCE_ID: 'abc' }, { FUNCTIONS_WORKER_RUNTIME: 'node' }]) {
      expect(() => loadSettings(host)).toThrow(/AUTH_MODE/);
      expect(() => loadSettings({ ...host, AUTH_MODE: 'open' })).toThrow(/AUTH_MODE/);
      expect(loadSettings({ ...host, AUTH_MODE: 'apikey' }).AUTH_MODE).toBe('apikey');
    }
  });

  it('entra modes need the tenant and the audience; a malformed mode fails with its name', () => {
    expect(() => loadSettings({ AUTH_MODE: 'entra' })).toThrow(/ENTRA_TENANT_ID and ENTRA_AUDIENCE/);
    expect(() => loadSettings({ AUTH_MODE: 'entra+apikey', ENTRA_TENANT_ID: 't' })).toThrow(/ENTRA_AUDIENCE/);
    expect(loadSettings({ AUTH_MODE: 'entra', ENTRA_TENANT_ID: 't', ENTRA_AUDIENCE: 'api://x' }).ENTRA_USER_CLAIM).toBe('oid');
    expect(() => loadSettings({ AUTH_MODE: 'none' })).toThrow(/AUTH_MODE/);
  });

  it('the local host runs open only on loopback, and says so in one line', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    for (const HOST of ['127.0.0.1', '::1', 'localhost']) assertOpenOnlyOnLoopback({ AUTH_MODE: 'open', HOST });
    expect(warn).toHaveBeenCalledTimes(3);
    expect(String(warn.mock.calls[0]![0])).toMatch(/AUTH_MODE=open/);
    for (const HOST of ['0.0.0.0', '::', '192.168.1.5', 'example.com']) expect(() => assertOpenOnlyOnLoopback({ AUTH_MODE: 'open', HOST })).toThrow(/loopback/);
    expect(() => assertOpenOnlyOnLoopback({ AUTH_MODE: 'apikey', HOST: '0.0.0.0' })).not.toThrow();
  });
});
