import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The API reference page (GET /api/docs): Swagger UI from the `swagger-ui-dist` package, served from the package's
 * own files (no CDN), reading the generated document at /api/openapi.json. URLs are relative to /api/docs, so the page
 * works under any host and prefix.
 */

const distDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/**
 * The page's script: Swagger UI on the generated document (a file, not inline, so the page needs no inline script).
 * `validatorUrl: null`: no badge fetched from swagger.io, so the page makes no request outside this service.
 */
const INIT = `window.ui = SwaggerUIBundle({ url: new URL('openapi.json', document.baseURI).href, dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null });\n`;

/** What /api/docs/{file} serves: the package's files by name, and the page's script. */
export const DOCS_ASSETS = {
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', file: 'swagger-ui.css' },
  'swagger-ui-bundle.js': { contentType: 'text/javascript; charset=utf-8', file: 'swagger-ui-bundle.js' },
  'favicon-32x32.png': { contentType: 'image/png', file: 'favicon-32x32.png' },
  'init.js': { contentType: 'text/javascript; charset=utf-8', text: INIT },
} as const satisfies Record<string, { contentType: string; file?: string; text?: string }>;
export type DocsAsset = keyof typeof DOCS_ASSETS;

export const isDocsAsset = (name: string): name is DocsAsset => Object.hasOwn(DOCS_ASSETS, name);

const cache = new Map<DocsAsset, Promise<Uint8Array>>();

/** An asset's bytes, read from the package once. */
export function docsAsset(name: DocsAsset): Promise<Uint8Array> {
  const asset: { file?: string; text?: string } = DOCS_ASSETS[name];
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = asset.text !== undefined ? Promise.resolve(new TextEncoder().encode(asset.text)) : readFile(join(distDir, asset.file!));
    bytes.catch(() => cache.delete(name));
    cache.set(name, bytes);
  }
  return bytes;
}

/** The page: relative to /api/docs, so `docs/…` are the assets and `openapi.json` the document. */
export const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Agent Memory Service API</title>
  <link rel="icon" type="image/png" href="docs/favicon-32x32.png">
  <link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/swagger-ui-bundle.js"></script>
  <script src="docs/init.js"></script>
  <noscript>The API reference needs JavaScript; the document itself is at <a href="openapi.json">openapi.json</a>.</noscript>
</body>
</html>
`;
