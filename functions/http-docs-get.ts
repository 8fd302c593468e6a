import { DOCS_PAGE } from '../shared/platform/api-docs.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpEndpoint } from '../shared/platform/http.js';

/** The API reference page (Swagger UI on /api/openapi.json); public like the document. */
export const handler = httpEndpoint(
  { access: 'public', summary: 'The API reference page (Swagger UI), public', responses: { 200: { description: 'The page', contentType: 'text/html' } } },
  async () => ({ status: 200, body: DOCS_PAGE, headers: { 'content-type': 'text/html; charset=utf-8', 'x-content-type-options': 'nosniff' } }),
);

export default defineFunction({ name: 'http-docs-get', trigger: http('GET', 'docs', { anonymous: true }), handler });
