import { countTokens as countO200k } from 'gpt-tokenizer';

/** Texts up to this length are counted exactly in one call. */
const EXACT_CHARS = 4096;
/** A run without whitespace longer than this is counted in pieces of this size. */
const RUN_PIECE = 1024;

/**
 * Token count with the o200k_base encoding used by current OpenAI chat models, in time near-linear in the length.
 * BPE merges within one pre-token (an unbroken run: base64, minified JSON, a long tool argument) cost time quadratic in
 * its length, so a text longer than 4 KiB is counted in pieces cut at whitespace, and a run longer than 1 KiB in pieces
 * of 1 KiB (never between the two halves of a surrogate pair). Exact up to 4 KiB; beyond, within about a token per cut.
 */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  if (text.length <= EXACT_CHARS) return countO200k(text);
  let total = 0;
  for (let start = 0; start < text.length; ) {
    const end = pieceEnd(text, start);
    total += countO200k(text.slice(start, end));
    start = end;
  }
  return total;
}

/** End of the piece starting at `start`: after the last whitespace within EXACT_CHARS, unless a run of over RUN_PIECE comes first. */
function pieceEnd(text: string, start: number): number {
  const limit = Math.min(text.length, start + EXACT_CHARS);
  if (limit === text.length) return limit;
  let lastSpace = -1;
  let runStart = start;
  for (let i = start; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) {
      lastSpace = i;
      runStart = i + 1;
    } else if (i - runStart >= RUN_PIECE) {
      // A long run: end the piece at the whitespace before it, or cut the run itself.
      return lastSpace > start ? lastSpace : safeCut(text, i);
    }
  }
  return lastSpace > start ? lastSpace : safeCut(text, limit);
}

/** `at`, moved back one when it would split a surrogate pair. */
const safeCut = (text: string, at: number): number => {
  const c = text.charCodeAt(at - 1);
  return c >= 0xd800 && c <= 0xdbff ? at - 1 : at;
};
