import type { HttpRequest } from '@azure/functions';
import { MemoryError } from '../domain/errors.js';

/**
 * What a request may be before any use case sees it (README, "Hostile input"): shared by the HTTP wrapper (Azure and the
 * local host alike) and the local host's server, which applies the same limits while the body streams in.
 */

/** Deepest nesting of arrays and objects a JSON body may have; checked on the raw text before JSON.parse. */
export const MAX_JSON_DEPTH = 64;

export const tooLarge = (maxBytes: number) => new MemoryError('payload_too_large', `The body exceeds ${maxBytes} bytes`, { maxBytes });

/** `application/json`, or any `application/*+json`, with optional parameters (charset). */
export const isJsonContentType = (value: string | null | undefined): boolean =>
  value !== null && value !== undefined && /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i.test(value.trim());

/**
 * Writes take JSON only: a form or `text/plain` body is what a web page can send cross-site without a CORS preflight.
 */
export function requireJsonContentType(value: string | null | undefined): void {
  if (!isJsonContentType(value)) throw new MemoryError('unsupported_media_type', 'The body must be JSON (Content-Type: application/json)');
}

/** The declared Content-Length: a number, 0 when absent, NaN when malformed. */
export function declaredLength(value: string | null | undefined): number {
  if (value === null || value === undefined || value === '') return 0;
  return /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
}

/** True when the request announces a body (a non-zero Content-Length, or chunked transfer). */
export const announcesBody = (contentLength: string | null | undefined, transferEncoding: string | null | undefined): boolean =>
  declaredLength(contentLength) !== 0 || (transferEncoding !== null && transferEncoding !== undefined && transferEncoding !== '');

export const bodyNotTaken = () => new MemoryError('validation_failed', 'This route takes no request body');

/** True when arrays and objects nest deeper than `max` (outside strings); one linear pass, no recursion. */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** Parses a JSON body whose size is already bounded; empty, malformed or too deep is 400. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === '') throw new MemoryError('validation_failed', 'The request needs a JSON body');
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw new MemoryError('validation_failed', `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch {
    throw new MemoryError('validation_failed', 'The body is not valid JSON');
  }
}

/**
 * Reads a request's body as text, at most `maxBytes`: a larger declared Content-Length is refused before reading, and
 * the stream is cancelled as soon as it passes the limit, so a rejected body is never held whole.
 */
export async function readLimitedText(req: HttpRequest, maxBytes: number): Promise<string> {
  const declared = declaredLength(req.headers.get('content-length'));
  if (Number.isNaN(declared)) throw new MemoryError('validation_failed', 'Content-Length is malformed');
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const stream = req.body as ReadableStream<Uint8Array> | null;
  if (!stream) return '';
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let size = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}
