import { defineFunction, http } from '../shared/platform/functions.js';
import { httpEndpoint } from '../shared/platform/http.js';
import { loadFunctions } from '../shared/platform/local-host/functions.js';
import { openApiDocument } from '../shared/platform/openapi.js';

let document: Promise<Record<string, unknown>> | undefined;

/** Public, like /health: the document describes the API and holds nothing per user. Generated once per instance. */
export const handler = httpEndpoint(
  { access: 'public', summary: 'This OpenAPI 3.1 document, generated from the routes and their zod contracts (public)', responses: { 200: { description: 'OK', contentType: 'application/json' } } },
  async () => {
    document ??= loadFunctions().then(openApiDocument);
    document.catch(() => (document = undefined));
    return { status: 200, jsonBody: await document, headers: { 'cache-control': 'public, max-age=300' } };
  },
);

export default defineFunction({ name: 'http-openapi-get', trigger: http('GET', 'openapi.json', { anonymous: true }), handler });
