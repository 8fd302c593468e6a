import { z } from 'zod';
import { DOCS_ASSETS, docsAsset, isDocsAsset } from '../shared/platform/api-docs.js';
import { notFound } from '../shared/domain/errors.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpEndpoint } from '../shared/platform/http.js';

const names = Object.keys(DOCS_ASSETS) as [keyof typeof DOCS_ASSETS, ...(keyof typeof DOCS_ASSETS)[]];

/** The reference page's scripts, styles and icon, from the swagger-ui-dist package; any other name is 404. */
export const handler = httpEndpoint(
  {
    access: 'public',
    summary: "The reference page's assets (from swagger-ui-dist), public",
    params: z.object({ file: z.enum(names) }),
    responses: { 200: { description: 'The asset (JavaScript, CSS or PNG)', contentType: 'application/octet-stream' } },
  },
  async (req) => {
    const name = req.params.file ?? '';
    if (!isDocsAsset(name)) throw notFound(`Asset ${name.slice(0, 64)}`);
    const body = await docsAsset(name);
    return { status: 200, body, headers: { 'content-type': DOCS_ASSETS[name].contentType, 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' } };
  },
);

export default defineFunction({ name: 'http-docs-asset-get', trigger: http('GET', 'docs/{file}', { anonymous: true }), handler });
