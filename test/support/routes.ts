import type { HttpHandler, HttpResponseInit } from '@azure/functions';
import type { Access } from '../../shared/platform/auth.js';
import type { FunctionDescriptor } from '../../shared/platform/functions.js';
import { routeDocOf } from '../../shared/platform/http.js';
import { loadFunctions } from '../../shared/platform/local-host/functions.js';
import { context, request } from './runtime.js';

export interface HttpRoute {
  name: string;
  method: string;
  /** `v1/users/{userId}/…` as the function declares it. */
  route: string;
  params: readonly string[];
  /** Who may call (`public`: no credentials, like /health and the API reference). */
  access: Access;
  handler: HttpHandler;
}

/** Every HTTP function of the app (functions/*.ts), as the Functions host would find them: new routes join by themselves. */
export async function httpRoutes(): Promise<HttpRoute[]> {
  const functions: FunctionDescriptor[] = await loadFunctions();
  return functions.flatMap((f) => {
    if (f.trigger.kind !== 'http') return [];
    const route = f.trigger.route;
    const params = [...route.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const access = routeDocOf(f.handler)?.access ?? 'user';
    return f.trigger.methods.map((method) => ({ name: f.name, method, route, params, access, handler: f.handler as HttpHandler }));
  });
}

/** Calls a route's handler like the host would: path params filled in, optional JSON body and headers. */
export async function callRoute(route: HttpRoute, params: Record<string, string>, options: { body?: object; headers?: Record<string, string>; query?: string } = {}): Promise<HttpResponseInit> {
  const path = route.route.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? 'x'));
  const filled = Object.fromEntries(route.params.map((p) => [p, params[p] ?? 'x']));
  // httpHandler answers with a plain HttpResponseInit.
  return (await route.handler(
    request(route.method, `${path}${options.query ? `?${options.query}` : ''}`, { params: filled, ...(options.body && { body: options.body }), ...(options.headers && { headers: options.headers }) }),
    context(route.name),
  )) as HttpResponseInit;
}
