/** The process's memory by part: RSS, this thread's V8 heap, what it holds outside it, PGlite's WASM memory. */
export interface MemoryParts {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** PGlite's WebAssembly memory (it grows and is never given back). */
  wasm: number;
}

/**
 * PGlite's WebAssembly memory (it grows, and is never given back), for the memory benches: the instance the store opens
 * is captured as it is created. Call before the store is opened; the answer is 0 until then.
 */
export async function capturePgliteMemory(): Promise<() => number> {
  const { PGlite } = await import('@electric-sql/pglite');
  let pglite: unknown;
  const create = PGlite.create.bind(PGlite) as (...args: unknown[]) => Promise<unknown>;
  (PGlite as unknown as { create: (...args: unknown[]) => Promise<unknown> }).create = async (...args: unknown[]) => (pglite = await create(...args));
  return () => (pglite as { mod?: { wasmMemory?: { buffer: ArrayBuffer } } } | undefined)?.mod?.wasmMemory?.buffer.byteLength ?? 0;
}
