import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FunctionDescriptor } from '../functions.js';

const functionsDir = fileURLToPath(new URL('../../../functions/', import.meta.url));

/** Every function of the app, discovered like the Functions host does: one module per file in functions/. */
export async function loadFunctions(dir = functionsDir): Promise<FunctionDescriptor[]> {
  const files = readdirSync(dir).filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts')).sort();
  const modules = await Promise.all(files.map((f) => import(pathToFileURL(`${dir}${f}`).href) as Promise<{ default?: FunctionDescriptor }>));
  return modules.flatMap((m) => (m.default ? [m.default] : []));
}
