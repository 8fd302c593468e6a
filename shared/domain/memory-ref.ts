import type { MemoryRef } from '../contracts/events.js';

/** Layer 1 of the two-layer memory: what the context shows instead of offloaded content. */
export const placeholder = (ref: Pick<MemoryRef, 'key' | 'description' | 'tokens'>): string =>
  `[MemoryRef: ${ref.key} - ${ref.description} - ${ref.tokens} tokens]`;

/** A content is offloaded when it has more tokens than the threshold (exactly the threshold stays inline). */
export const shouldOffload = (tokens: number, thresholdTokens: number): boolean => tokens > thresholdTokens;

/**
 * The content's token count if it is to be offloaded, else undefined. A text of at most the threshold in UTF-8 bytes
 * is not counted: a token is at least one byte, so it cannot exceed it (most turns; counting was 1% of a hosted
 * ingestion's service thread).
 */
export function offloadTokens(text: string, thresholdTokens: number, count: (text: string) => number): number | undefined {
  if (Buffer.byteLength(text) <= thresholdTokens) return undefined;
  const tokens = countContentTokens(text, count);
  return shouldOffload(tokens, thresholdTokens) ? tokens : undefined;
}

const CHUNK = 4096;
const HARD_CUT = 1024;

/**
 * Token count of a possibly huge content, in bounded time: the BPE cost of one unbroken run (base64, minified data)
 * grows much faster than its length, so long texts are counted in chunks cut at whitespace (runs longer than 1 KiB
 * are cut hard). Exact for texts up to 4 KiB (the offload boundary), within a token per cut beyond.
 */
export function countContentTokens(text: string, count: (text: string) => number): number {
  if (text.length <= CHUNK) return count(text);
  let total = 0;
  for (let start = 0; start < text.length; ) {
    let end = Math.min(text.length, start + CHUNK);
    if (end < text.length) {
      const window = text.slice(start, end);
      const lastSpace = Math.max(window.lastIndexOf(' '), window.lastIndexOf('\n'));
      end = lastSpace > 0 ? start + lastSpace : start + HARD_CUT;
      // A long run before the whitespace: cut it hard as well.
      if (lastSpace > 0 && !/\s/.test(text.slice(start, Math.min(end, start + HARD_CUT + 1)))) end = start + HARD_CUT;
    }
    total += count(text.slice(start, end));
    start = end;
  }
  return total;
}
