import type { CosmosContainerSpec } from './containers.js';

/**
 * Vectors as Cosmos DB stores them: every vector path is declared float32 (`containerDefinitions`), so a component
 * needs no more digits than identify its float32. JavaScript prints the double it holds in full (an OpenAI embedding
 * decoded from base64 float32 prints as `-0.0123456789123456789`, 21 bytes a component); the shortest decimal of at
 * most 9 significant digits that rounds to the same float32 is a third smaller and loses nothing Cosmos keeps:
 * `Math.fround(float32Component(x)) === Math.fround(x)` for every finite x. Document size is what reads and writes
 * are charged by, and every ranked list loads its documents whole (README, "Cosmos DB cost on paper").
 */
export function float32Component(x: number): number {
  if (!Number.isFinite(x)) return x;
  const f = Math.fround(x);
  // Six significant digits first: a float32 whose shortest decimal is shorter prints the same number at 6 (Number
  // drops the trailing zeros); 9 always identify a float32.
  for (let digits = 6; digits < 9; digits++) {
    const candidate = Number(f.toPrecision(digits));
    if (Math.fround(candidate) === f) return candidate;
  }
  return Number(f.toPrecision(9));
}

export const float32Vector = (values: readonly number[]): number[] => values.map(float32Component);

/** The document with each vector of the container's vector paths (top-level) written as float32Vector. */
export function withFloat32Vectors<T extends object>(doc: T, spec: Pick<CosmosContainerSpec, 'vectorPaths'>): T {
  let out: T | undefined;
  for (const path of spec.vectorPaths) {
    const key = path.slice(1);
    const value = (doc as Record<string, unknown>)[key];
    if (!Array.isArray(value)) continue;
    out ??= { ...doc };
    (out as Record<string, unknown>)[key] = float32Vector(value as number[]);
  }
  return out ?? doc;
}
