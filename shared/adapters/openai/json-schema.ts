import { z } from 'zod';

type Schema = Record<string, unknown>;

/**
 * Keywords kept for strict structured outputs. OpenAI and Azure OpenAI differ in which type-specific constraints
 * (minLength, maxItems, minimum, ...) strict mode accepts, and an unsupported one fails the request, so strict schemas
 * carry structure only. Nothing is lost: every answer is validated with the zod schema afterwards, and the prompts
 * state the limits.
 */
const STRICT_KEYWORDS = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf', 'description', '$defs', '$ref']);

export interface ResponseSchema {
  schema: Schema;
  /** Whether the schema meets strict mode's rules (every object closed, every property required). */
  strict: boolean;
}

/**
 * The JSON schema sent as `response_format.json_schema` for a zod output schema (zod 4's `z.toJSONSchema`). Strict
 * when the schema allows it; otherwise the full schema, non-strict (the model is then only guided by it).
 */
export function responseSchema(output: z.ZodType): ResponseSchema {
  const full = z.toJSONSchema(output, { io: 'output', unrepresentable: 'any' }) as Schema;
  delete full.$schema; // the dialect URI is not part of a response format
  return isStrictCompatible(full) && full.type === 'object' ? { schema: stripForStrict(full), strict: true } : { schema: full, strict: false };
}

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

function isStrictCompatible(node: Schema): boolean {
  const typed = 'type' in node || 'anyOf' in node || '$ref' in node || 'enum' in node || 'const' in node;
  if (!typed) return false; // `{}` (any) is not allowed in strict mode
  if (isSchema(node.properties) || node.type === 'object') {
    const properties = isSchema(node.properties) ? node.properties : {};
    const required = Array.isArray(node.required) ? node.required : [];
    const keys = Object.keys(properties);
    if (node.additionalProperties !== false || keys.length !== required.length || !keys.every((k) => required.includes(k))) return false;
    if (!Object.values(properties).every((p) => isSchema(p) && isStrictCompatible(p))) return false;
  }
  if ('items' in node && !(isSchema(node.items) && isStrictCompatible(node.items))) return false;
  if ('anyOf' in node && !(Array.isArray(node.anyOf) && node.anyOf.every((s) => isSchema(s) && isStrictCompatible(s)))) return false;
  if (isSchema(node.$defs) && !Object.values(node.$defs).every((s) => isSchema(s) && isStrictCompatible(s))) return false;
  return true;
}

function stripForStrict(node: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (!STRICT_KEYWORDS.has(key)) continue;
    if ((key === 'properties' || key === '$defs') && isSchema(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSchema(v) ? stripForStrict(v) : v]));
    } else if (key === 'items' && isSchema(value)) {
      out[key] = stripForStrict(value);
    } else if (key === 'anyOf' && Array.isArray(value)) {
      out[key] = value.map((v: unknown) => (isSchema(v) ? stripForStrict(v) : v));
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** Returns a copy of `schema` whose node at `path` (property names; `items` steps into arrays) has `enum` set. */
export function withEnumAt(schema: Schema, path: readonly string[], values: readonly string[]): Schema {
  const copy = structuredClone(schema);
  let node: unknown = copy;
  for (const step of path) {
    if (!isSchema(node)) return copy;
    node = step === 'items' ? node.items : isSchema(node.properties) ? node.properties[step] : undefined;
  }
  if (isSchema(node)) node.enum = [...new Set(values)];
  return copy;
}
