/**
 * The BM25 postings of the in-process search snapshots (search-snapshot.ts), held in typed arrays. A snapshot's rows
 * hold a few million terms over tens of thousands of lexemes, most of them in one or two rows: per lexeme, a Map entry,
 * its string and a list of its own would cost more than its postings. So a snapshot numbers its lexemes once
 * (`Lexicon`), and each kind of row lays out its postings by that number (`Postings`).
 */

/** A growing typed array of 32-bit integers (signed or not) or of doubles: 4 or 8 bytes a number, where a JavaScript array takes 8. */
export class Numbers {
  values: Int32Array | Uint32Array | Float64Array;
  length = 0;

  constructor(private readonly kind: 'int' | 'uint' | 'float') {
    this.values = this.make(64);
  }

  get byteLength(): number {
    return this.values.byteLength;
  }

  push(x: number): void {
    if (this.length === this.values.length) this.resize(Math.max(16, Math.ceil(this.length * 1.5)));
    this.values[this.length++] = x;
  }

  /** Gives back the room not used. */
  trim(): void {
    if (this.values.length > this.length) this.resize(this.length);
  }

  /** Empties it, and gives back its room. */
  clear(): void {
    this.length = 0;
    this.values = this.make(64);
  }

  private resize(size: number): void {
    const values = this.make(size);
    values.set(this.values.subarray(0, Math.min(size, this.length)));
    this.values = values;
  }

  private make(size: number): Int32Array | Uint32Array | Float64Array {
    return this.kind === 'int' ? new Int32Array(size) : this.kind === 'uint' ? new Uint32Array(size) : new Float64Array(size);
  }
}

/**
 * A snapshot's lexemes, numbered 0, 1, 2, … in the order first seen: an open-addressing hash table over their UTF-8
 * bytes, all in typed arrays. A lexeme is looked up in place in the bytes it is read from (a tsvector's binary form), so
 * a build makes no string for any of its terms.
 */
export class Lexicon {
  /** Every lexeme's UTF-8 bytes, one after another; lexeme `id` ends at `ends[id]`. */
  private bytes = new Uint8Array(4096);
  private readonly ends = new Numbers('int');
  /** The hash table: a lexeme's number plus one, 0 for an empty slot; at most half full. */
  private slots = new Int32Array(1024);

  get size(): number {
    return this.ends.length;
  }

  get byteLength(): number {
    return this.bytes.byteLength + this.ends.byteLength + this.slots.byteLength;
  }

  /** The lexeme's number; -1 when it is not held. */
  find(lexeme: string): number {
    const bytes = Buffer.from(lexeme, 'utf8');
    return this.slots[this.slotOf(bytes, 0, bytes.length)]! - 1;
  }

  /** The number of the lexeme whose UTF-8 bytes are `bytes[start]` up to `bytes[end]`, numbered now if new. */
  intern(bytes: Uint8Array, start: number, end: number): number {
    const slot = this.slotOf(bytes, start, end);
    if (this.slots[slot]! > 0) return this.slots[slot]! - 1;
    const at = this.size === 0 ? 0 : this.ends.values[this.size - 1]!;
    if (at + end - start > this.bytes.length) {
      const grown = new Uint8Array(Math.ceil((at + end - start) * 1.5));
      grown.set(this.bytes.subarray(0, at));
      this.bytes = grown;
    }
    this.bytes.set(bytes.subarray(start, end), at);
    this.ends.push(at + end - start);
    this.slots[slot] = this.size;
    if (2 * this.size > this.slots.length) this.rehash(2 * this.slots.length);
    return this.size - 1;
  }

  /** Gives back the room not used (after a build; a new lexeme grows it again). */
  trim(): void {
    this.bytes = this.bytes.slice(0, this.size === 0 ? 0 : this.ends.values[this.size - 1]!);
    this.ends.trim();
  }

  /** The slot holding the lexeme `bytes[start]` up to `bytes[end]`, or the empty slot where it would go. */
  private slotOf(bytes: Uint8Array, start: number, end: number): number {
    const mask = this.slots.length - 1;
    for (let slot = hash(bytes, start, end) & mask; ; slot = (slot + 1) & mask) {
      const id = this.slots[slot]! - 1;
      if (id < 0 || this.equals(id, bytes, start, end)) return slot;
    }
  }

  private equals(id: number, bytes: Uint8Array, start: number, end: number): boolean {
    const from = id === 0 ? 0 : this.ends.values[id - 1]!;
    if (this.ends.values[id]! - from !== end - start) return false;
    for (let i = start; i < end; i++) if (this.bytes[from + i - start] !== bytes[i]) return false;
    return true;
  }

  private rehash(size: number): void {
    const slots = new Int32Array(size);
    const mask = size - 1;
    for (let id = 0, from = 0; id < this.size; from = this.ends.values[id++]!) {
      let slot = hash(this.bytes, from, this.ends.values[id]!) & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = id + 1;
    }
    this.slots = slots;
  }
}

/** FNV-1a, 32 bits. */
function hash(bytes: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h;
}

/**
 * One kind of row's posting lists, by lexeme number (a `Lexicon`'s): 32-bit codes (search-snapshot.ts packs a row and
 * a term frequency in one) in the order pushed. Laid out after a build as compressed sparse rows: per lexeme an
 * offset into one array of all the codes, 4 bytes a lexeme and 4 a code. What is pushed is first logged as pairs of
 * lexeme and code, which a list reads after its laid-out part: a build logs all its rows and lays them out once
 * (`layOut`), and rows added later (a snapshot's refresh adds a few) are folded in once the log passes a 32nd of the
 * rest, so a list's read scans a short log and the folds cost a few copies of each code in all.
 */
export class Postings {
  /** Lexeme `id`'s laid-out codes are `codes[offsets[id]]` up to `codes[offsets[id + 1]]`. */
  private offsets = new Int32Array(1);
  private codes = new Uint32Array(0);
  private readonly logged = new Numbers('int');
  private readonly loggedCodes = new Numbers('uint');
  /** Whether a build laid the postings out: until then, nothing is folded in as it is pushed. */
  private built = false;

  constructor(private readonly lexicon: Lexicon) {}

  get byteLength(): number {
    return this.offsets.byteLength + this.codes.byteLength + this.logged.byteLength + this.loggedCodes.byteLength;
  }

  push(lexeme: number, code: number): void {
    this.logged.push(lexeme);
    this.loggedCodes.push(code);
    if (this.built && this.logged.length > Math.max(FOLD_AT_LEAST, this.codes.length / 32)) this.layOut();
  }

  /** The codes of the lexeme's list. */
  count(lexeme: number): number {
    let count = lexeme + 1 < this.offsets.length ? this.offsets[lexeme + 1]! - this.offsets[lexeme]! : 0;
    const logged = this.logged.values;
    for (let i = 0; i < this.logged.length; i++) if (logged[i] === lexeme) count++;
    return count;
  }

  /** Calls `f` with each code of the lexeme's list, in the order pushed. */
  forEach(lexeme: number, f: (code: number) => void): void {
    if (lexeme + 1 < this.offsets.length) for (let i = this.offsets[lexeme]!; i < this.offsets[lexeme + 1]!; i++) f(this.codes[i]!);
    const logged = this.logged.values;
    for (let i = 0; i < this.logged.length; i++) if (logged[i] === lexeme) f(this.loggedCodes.values[i]!);
  }

  /** Folds the log into the laid-out lists (after a build, and as the log grows), each list's codes in the order pushed. */
  layOut(): void {
    const lexemes = this.lexicon.size;
    const old = this.offsets;
    const heldLexemes = old.length - 1;
    const offsets = new Int32Array(lexemes + 1);
    for (let id = 0; id < heldLexemes; id++) offsets[id + 1] = old[id + 1]! - old[id]!;
    const logged = this.logged.values;
    for (let i = 0; i < this.logged.length; i++) offsets[logged[i]! + 1]!++;
    for (let id = 0; id < lexemes; id++) offsets[id + 1]! += offsets[id]!;
    const codes = new Uint32Array(offsets[lexemes]!);
    // Each list's laid-out codes first, then its logged ones.
    const next = offsets.slice(0, lexemes);
    for (let id = 0; id < heldLexemes; id++) for (let i = old[id]!; i < old[id + 1]!; i++) codes[next[id]!++] = this.codes[i]!;
    const loggedCodes = this.loggedCodes.values;
    for (let i = 0; i < this.logged.length; i++) codes[next[logged[i]!]!++] = loggedCodes[i]!;
    this.offsets = offsets;
    this.codes = codes;
    this.logged.clear();
    this.loggedCodes.clear();
    this.built = true;
  }
}

/** The log is folded in past this many codes at least (and a 32nd of the laid-out ones). */
const FOLD_AT_LEAST = 16_384;
