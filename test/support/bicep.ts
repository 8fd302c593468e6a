import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Language, Parser, type Node, type Tree } from 'web-tree-sitter';

/**
 * Reading Bicep without the Bicep compiler (none can be installed offline): the tree-sitter Bicep grammar parses the
 * files, and a small evaluator computes the value of plain expressions (literals, variables, parameters given by the
 * caller, member access, ternaries, lambdas and the handful of functions the templates use). Anything else throws,
 * so a template change the evaluator cannot follow fails a test instead of being compared wrongly.
 */

let parser: Promise<Parser> | undefined;

export function bicepParser(): Promise<Parser> {
  return (parser ??= (async () => {
    await Parser.init();
    const wasm = createRequire(import.meta.url).resolve('tree-sitter-bicep/tree-sitter-bicep.wasm');
    const p = new Parser();
    p.setLanguage(await Language.load(wasm));
    return p;
  })());
}

export interface SyntaxProblem {
  kind: 'ERROR' | 'MISSING';
  line: number;
  column: number;
  text: string;
}

/** Every ERROR and MISSING node of a parse tree, with 1-based positions. */
export function syntaxProblems(tree: Tree): SyntaxProblem[] {
  const problems: SyntaxProblem[] = [];
  const visit = (node: Node): void => {
    if (node.isError || node.isMissing) {
      problems.push({
        kind: node.isMissing ? 'MISSING' : 'ERROR',
        line: node.startPosition.row + 1,
        column: node.startPosition.column + 1,
        text: node.isMissing ? node.type : node.text.slice(0, 80),
      });
    }
    for (const child of node.children) if (child) visit(child);
  };
  visit(tree.rootNode);
  return problems;
}

/** A reference the evaluator cannot resolve from what the caller supplied (a module output, `resourceGroup()`, ...). */
export class UnresolvedReference extends Error {
  constructor(readonly reference: string) {
    super(`Cannot evaluate '${reference}' without deploying`);
  }
}

export type Bindings = Readonly<Record<string, unknown>>;

const named = (node: Node): Node[] => node.namedChildren.filter((c): c is Node => c !== null && c.type !== 'comment');

/** The expression after `=` in a declaration (a parameter default, a variable or output value, a resource body). */
function valueAfterEquals(node: Node): Node | undefined {
  const children = node.children.filter((c): c is Node => c !== null);
  const eq = children.findIndex((c) => c.type === '=');
  return eq < 0 ? undefined : children.slice(eq + 1).find((c) => c.isNamed && c.type !== 'comment');
}

export interface Declaration {
  name: string;
  node: Node;
  /** For resources and modules: the type string / module path. */
  target?: string;
  /** Variable and output value, parameter default, resource or module body (an object, or a for / if statement). */
  value?: Node;
}

export class BicepFile {
  readonly params = new Map<string, Declaration>();
  readonly vars = new Map<string, Declaration>();
  readonly outputs = new Map<string, Declaration>();
  readonly resources: Declaration[] = [];
  readonly modules: Declaration[] = [];

  constructor(
    readonly path: string,
    readonly tree: Tree,
  ) {
    for (const node of named(tree.rootNode)) {
      const [id, second] = named(node);
      if (!id || id.type !== 'identifier') continue;
      const declaration: Declaration = { name: id.text, node, value: valueAfterEquals(node) };
      switch (node.type) {
        case 'parameter_declaration':
          this.params.set(id.text, declaration);
          break;
        case 'variable_declaration':
          this.vars.set(id.text, declaration);
          break;
        case 'output_declaration':
          this.outputs.set(id.text, declaration);
          break;
        case 'resource_declaration':
          this.resources.push({ ...declaration, target: second ? stringLiteral(second) : undefined });
          break;
        case 'module_declaration':
          this.modules.push({ ...declaration, target: second ? stringLiteral(second) : undefined });
          break;
      }
    }
  }

  static async read(path: string): Promise<BicepFile> {
    const tree = (await bicepParser()).parse(readFileSync(path, 'utf8'));
    if (!tree) throw new Error(`tree-sitter returned no tree for ${path}`);
    return new BicepFile(path, tree);
  }

  /** Resources whose type starts with `type@` (any API version). */
  resourcesOfType(type: string): Declaration[] {
    return this.resources.filter((r) => r.target?.startsWith(`${type}@`));
  }

  module(path: string): Declaration {
    const found = this.modules.find((m) => m.target === path);
    if (!found) throw new Error(`${this.path} declares no module '${path}'`);
    return found;
  }

  /** Evaluates an expression of this file. Parameters come from `params`; variables are evaluated on demand. */
  evaluate(node: Node, params: Bindings = {}, locals: Bindings = {}): unknown {
    return new Evaluator(this, params).eval(node, locals);
  }

  /** A parameter's default value, evaluated; `undefined` if it has none. */
  paramDefault(name: string, params: Bindings = {}): unknown {
    const declaration = this.params.get(name);
    if (!declaration) throw new Error(`${this.path} declares no parameter '${name}'`);
    return declaration.value ? this.evaluate(declaration.value, params) : undefined;
  }
}

/** The literal text of a string node without interpolation (a resource type or module path). */
function stringLiteral(node: Node): string | undefined {
  if (node.type !== 'string') return undefined;
  const parts = named(node);
  if (parts.some((p) => p.type === 'interpolation')) return undefined;
  return parts.map((p) => (p.type === 'escape_sequence' ? unescape(p.text) : p.text)).join('');
}

function unescape(sequence: string): string {
  const simple: Record<string, string> = { "\\'": "'", '\\\\': '\\', '\\n': '\n', '\\r': '\r', '\\t': '\t', '\\$': '$' };
  const known = simple[sequence];
  if (known !== undefined) return known;
  const unicode = /^\\u\{([0-9a-fA-F]+)\}$/.exec(sequence);
  if (unicode?.[1]) return String.fromCodePoint(parseInt(unicode[1], 16));
  throw new Error(`Unknown escape sequence ${sequence}`);
}

/** The value node of `key` in an object node (keys may be identifiers or strings). */
export function objectProperty(object: Node, key: string): Node | undefined {
  if (object.type !== 'object') throw new Error(`Expected an object, got ${object.type} at line ${object.startPosition.row + 1}`);
  for (const property of named(object)) {
    if (property.type !== 'object_property') continue;
    const [k, v] = named(property);
    if (k && v && propertyKey(k) === key) return v;
  }
  return undefined;
}

/** The keys of an object node, in source order. */
export function objectKeys(object: Node): string[] {
  if (object.type !== 'object') throw new Error(`Expected an object, got ${object.type} at line ${object.startPosition.row + 1}`);
  return named(object)
    .filter((p) => p.type === 'object_property')
    .map((p) => {
      const key = named(p)[0];
      if (!key) throw new Error(`Object property without a key at line ${p.startPosition.row + 1}`);
      return propertyKey(key);
    });
}

function propertyKey(key: Node): string {
  if (key.type === 'identifier') return key.text;
  const literal = stringLiteral(key);
  if (literal === undefined) throw new Error(`Computed object key '${key.text}' at line ${key.startPosition.row + 1}`);
  return literal;
}

/** Follows a path of object keys from an object node. */
export function propertyPath(object: Node, ...keys: string[]): Node {
  let current = object;
  for (const key of keys) {
    const next = objectProperty(current, key);
    if (!next) throw new Error(`No '${keys.join('.')}' in the object at line ${object.startPosition.row + 1}`);
    current = next;
  }
  return current;
}

export interface ForLoop {
  /** The loop variable (and index variable, if any). */
  item: string;
  index?: string;
  iterable: Node;
  body: Node;
}

/** The parts of a `[for x in xs: body]` expression. */
export function forLoop(node: Node): ForLoop {
  if (node.type !== 'for_statement') throw new Error(`Expected a for expression, got ${node.type}`);
  const parts = named(node);
  const [head, iterable, body] = parts;
  if (!head || !iterable || !body || parts.length !== 3) throw new Error(`Unexpected for expression shape at line ${node.startPosition.row + 1}`);
  if (head.type === 'for_loop_parameters') {
    const [item, index] = named(head);
    if (!item) throw new Error('for loop without a variable');
    return { item: item.text, index: index?.text, iterable, body };
  }
  return { item: head.text, iterable, body };
}

type Lambda = (...args: unknown[]) => unknown;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const deepEqual = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** ARM `union`: objects merge recursively (later keys win), arrays concatenate without duplicates. */
function union(values: unknown[]): unknown {
  if (values.every(isObject)) {
    const merged: Record<string, unknown> = {};
    for (const value of values) {
      for (const [k, v] of Object.entries(value)) merged[k] = isObject(merged[k]) && isObject(v) ? union([merged[k], v]) : v;
    }
    return merged;
  }
  if (values.every(Array.isArray)) {
    const out: unknown[] = [];
    for (const item of values.flat()) if (!out.some((o) => deepEqual(o, item))) out.push(item);
    return out;
  }
  throw new Error('union() of mixed types');
}

const FUNCTIONS: Record<string, (args: unknown[]) => unknown> = {
  union,
  concat: (args) => (args.every(Array.isArray) ? args.flat() : args.map(String).join('')),
  map: ([array, fn]) => {
    if (!Array.isArray(array) || typeof fn !== 'function') throw new Error('map() takes an array and a lambda');
    return array.map((item, i) => (fn as Lambda)(item, i));
  },
  empty: ([v]) => (Array.isArray(v) || typeof v === 'string' ? v.length === 0 : isObject(v) ? Object.keys(v).length === 0 : v === null),
  length: ([v]) => {
    if (Array.isArray(v) || typeof v === 'string') return v.length;
    if (isObject(v)) return Object.keys(v).length;
    throw new Error('length() of a non-collection');
  },
  string: ([v]) => (typeof v === 'string' ? v : JSON.stringify(v)),
  toLower: ([v]) => String(v).toLowerCase(),
};

class Evaluator {
  private readonly varCache = new Map<string, unknown>();

  constructor(
    private readonly file: BicepFile,
    private readonly params: Bindings,
  ) {}

  eval(node: Node, locals: Bindings): unknown {
    switch (node.type) {
      case 'string':
        return named(node)
          .map((part) => {
            if (part.type === 'string_content') return part.text;
            if (part.type === 'escape_sequence') return unescape(part.text);
            if (part.type === 'interpolation') {
              const [expr] = named(part);
              if (!expr) throw new Error('Empty interpolation');
              const v = this.eval(expr, locals);
              return typeof v === 'string' ? v : JSON.stringify(v);
            }
            throw new Error(`Unexpected string part ${part.type}`);
          })
          .join('');
      case 'number':
        return Number(node.text);
      case 'boolean':
        return node.text === 'true';
      case 'null':
        return null;
      case 'array':
        return named(node).map((item) => this.eval(item, locals));
      case 'object': {
        const out: Record<string, unknown> = {};
        for (const key of objectKeys(node)) out[key] = this.eval(objectProperty(node, key)!, locals);
        return out;
      }
      case 'parenthesized_expression':
        return this.eval(this.only(node), locals);
      case 'identifier':
        return this.lookup(node.text, locals);
      case 'member_expression': {
        const parts = named(node);
        const object = parts[0];
        const property = parts.at(-1);
        if (!object || !property) throw new Error('Malformed member expression');
        const value = this.eval(object, locals);
        if (!isObject(value) || !(property.text in value)) throw new Error(`No property '${property.text}' in ${node.text}`);
        return value[property.text];
      }
      case 'subscript_expression': {
        const [object, index] = named(node);
        if (!object || !index) throw new Error('Malformed subscript expression');
        const value = this.eval(object, locals);
        const i = this.eval(index, locals);
        if (Array.isArray(value) && typeof i === 'number') return value[i];
        if (isObject(value) && typeof i === 'string') return value[i];
        throw new Error(`Cannot index ${node.text}`);
      }
      case 'unary_expression': {
        const operator = node.children.find((c) => c && !c.isNamed)?.type;
        const value = this.eval(this.only(node), locals);
        if (operator === '!') return !value;
        if (operator === '-') return -(value as number);
        throw new Error(`Unsupported unary operator ${operator}`);
      }
      case 'binary_expression': {
        const [left, right] = named(node);
        const operator = node.children.find((c) => c && !c.isNamed)?.type;
        if (!left || !right || !operator) throw new Error('Malformed binary expression');
        const l = this.eval(left, locals);
        if (operator === '&&') return l ? this.eval(right, locals) : l;
        if (operator === '||') return l ? l : this.eval(right, locals);
        if (operator === '??') return l ?? this.eval(right, locals);
        const r = this.eval(right, locals);
        if (operator === '==') return deepEqual(l, r);
        if (operator === '!=') return !deepEqual(l, r);
        throw new Error(`Unsupported operator ${operator}`);
      }
      case 'ternary_expression': {
        const [condition, consequence, alternative] = named(node);
        if (!condition || !consequence || !alternative) throw new Error('Malformed ternary');
        return this.eval(condition, locals) ? this.eval(consequence, locals) : this.eval(alternative, locals);
      }
      case 'lambda_expression': {
        const parts = named(node);
        const body = parts.at(-1);
        if (!body) throw new Error('Lambda without a body');
        const names = parts.slice(0, -1).flatMap((p) => (p.type === 'identifier' ? [p.text] : named(p).map((n) => n.text)));
        return (...args: unknown[]) => this.eval(body, { ...locals, ...Object.fromEntries(names.map((n, i) => [n, args[i]])) });
      }
      case 'call_expression': {
        const [fn, args] = named(node);
        if (!fn || !args) throw new Error('Malformed call');
        const impl = FUNCTIONS[fn.text];
        if (!impl) throw new UnresolvedReference(`${fn.text}()`);
        return impl(named(args).map((a) => this.eval(a, locals)));
      }
      default:
        throw new Error(`The Bicep evaluator does not handle '${node.type}' (${node.text.slice(0, 60)}) at line ${node.startPosition.row + 1}`);
    }
  }

  private only(node: Node): Node {
    const [inner] = named(node);
    if (!inner) throw new Error(`Empty ${node.type}`);
    return inner;
  }

  private lookup(name: string, locals: Bindings): unknown {
    if (name in locals) return locals[name];
    if (name in this.params) return this.params[name];
    if (this.file.params.has(name)) throw new UnresolvedReference(`param ${name}`);
    const declaration = this.file.vars.get(name);
    if (declaration?.value) {
      if (!this.varCache.has(name)) this.varCache.set(name, this.eval(declaration.value, {}));
      return this.varCache.get(name);
    }
    throw new UnresolvedReference(name);
  }
}
