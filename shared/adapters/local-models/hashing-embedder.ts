import { createHash } from 'node:crypto';
import type { Embedder } from '../../application/ports.js';
import { contentWords } from './text.js';

/**
 * Offline embedder: signed feature hashing of content words and word bigrams, L2-normalised. Lexical, not semantic —
 * it stands in until a sentence-encoder model is wired in — but deterministic, fast and dependency-free.
 */
export class HashingEmbedder implements Embedder {
  readonly model: string;

  constructor(readonly dimensions = 256) {
    this.model = `local-hashing-${dimensions}`;
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    return texts.map((text) => this.embedOne(text));
  }

  private embedOne(text: string): number[] {
    const vector = new Array<number>(this.dimensions).fill(0);
    const ws = contentWords(text);
    const features = [...ws, ...ws.slice(1).map((w, i) => `${ws[i]} ${w}`)];
    for (const feature of features) {
      const digest = createHash('md5').update(feature).digest();
      const index = digest.readUInt32LE(0) % this.dimensions;
      vector[index]! += digest[4]! & 1 ? 1 : -1;
    }
    const norm = Math.hypot(...vector);
    return norm === 0 ? vector : vector.map((v) => v / norm);
  }
}
