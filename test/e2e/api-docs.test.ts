import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalHost } from '../../shared/platform/local-host/host.js';

// The API reference over real HTTP on the local host: the page, its assets from swagger-ui-dist, and the page rendered
// in a real headless Chromium (Debian's `chromium` package, driven by playwright-core). Without Chromium the browser
// test is skipped and says so.

/** Debian's Chromium: CHROMIUM_PATH, then `chromium` on the PATH, then the usual install paths. */
function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium', '/snap/bin/chromium'];
  try {
    candidates.splice(1, 0, execFileSync('which', ['chromium'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // not on the PATH
  }
  return candidates.find((c): c is string => !!c && existsSync(c));
}

const chromium = findChromium();
if (!chromium) console.warn('api-docs.test: Chromium not found (apt-get install chromium, or set CHROMIUM_PATH): the rendered /api/docs page is not checked in a browser');

describe('API reference on the local host', () => {
  let host: Awaited<ReturnType<typeof startLocalHost>>;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ams-docs-'));
    process.env.MEMORY_DATA_DIR = join(dataDir, 'pglite');
    host = await startLocalHost({ port: 0, timers: false });
  }, 120_000);
  afterAll(async () => {
    await host?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('GET /api/docs is HTML loading swagger-ui-dist from /api/docs/… and the document from /api/openapi.json', async () => {
    const page = await fetch(`${host.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="(docs\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toEqual(expect.arrayContaining(['docs/swagger-ui-bundle.js', 'docs/swagger-ui.css', 'docs/init.js']));
    const types: Record<string, RegExp> = { js: /^text\/javascript/, css: /^text\/css/, png: /^image\/png/ };
    for (const asset of assets) {
      const res = await fetch(new URL(asset, `${host.url}/docs`));
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type'), asset).toMatch(types[asset.split('.').pop()!]!);
      await res.arrayBuffer();
    }
    const init = await (await fetch(`${host.url}/docs/init.js`)).text();
    expect(new URL(/'(openapi\.json)'/.exec(init)![1]!, `${host.url}/docs`).href).toBe(`${host.url}/openapi.json`);
    const doc = (await (await fetch(`${host.url}/openapi.json`)).json()) as { openapi: string };
    expect(doc.openapi).toBe('3.1.0');
  });

  it.skipIf(!chromium)('renders in headless Chromium: the operations list shows the routes', async () => {
    const { chromium: browserType } = await import('playwright-core');
    const browser = await browserType.launch({ executablePath: chromium!, headless: true, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      await page.goto(`${host.url}/docs`);
      // Swagger UI fetches the document, then renders one block per operation.
      const turns = page.locator('.opblock-summary-path[data-path="/v1/users/{userId}/sessions/{sessionId}/turns"]');
      await turns.first().waitFor({ state: 'visible' });
      expect(await page.locator('.opblock').count()).toBeGreaterThanOrEqual(20);
      expect(await page.locator('.opblock-summary-path[data-path="/mcp"]').count()).toBe(3);
      await expect(page.locator('.info .title').innerText()).resolves.toMatch(/Agent Memory Service/);
      expect(errors).toEqual([]);
      // Everything came from the local host: no CDN.
      expect(requests.filter((url) => /^https?:/.test(url) && !url.startsWith(host.url.replace(/\/api$/, '')))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
