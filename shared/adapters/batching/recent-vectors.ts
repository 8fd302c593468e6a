/**
 * The vectors of the texts embedded last, least recent first (a Map keeps insertion order), bounded by the numbers they
 * hold and by the characters of their texts, whatever the dimensions and whatever the offload threshold lets a turn's
 * text be. Stored as float32 (what the encoder and a hosted endpoint's base64 give): a copy is handed out each time.
 */
export class RecentVectors {
  private readonly entries = new Map<string, Float32Array>();
  private numbers = 0;
  private chars = 0;

  constructor(private readonly limits: { numbers: number; chars: number }) {}

  /** A text's vector, now the most recent; undefined if it is not held. */
  get(text: string): number[] | undefined {
    const stored = this.entries.get(text);
    if (!stored) return undefined;
    this.entries.delete(text);
    this.entries.set(text, stored);
    const vector = new Array<number>(stored.length);
    for (let i = 0; i < stored.length; i++) vector[i] = stored[i]!;
    return vector;
  }

  /** Whether a text's vector is held (it stays where it is in recency). */
  has(text: string): boolean {
    return this.entries.has(text);
  }

  /** Holds a text's vector as the most recent, dropping the least recent past either limit. */
  set(text: string, vector: readonly number[]): void {
    this.drop(text);
    this.entries.set(text, Float32Array.from(vector));
    this.numbers += vector.length;
    this.chars += text.length;
    while (this.numbers > this.limits.numbers || this.chars > this.limits.chars) this.drop(this.entries.keys().next().value!);
  }

  get size(): number {
    return this.entries.size;
  }

  private drop(text: string): void {
    const stored = this.entries.get(text);
    if (!stored) return;
    this.entries.delete(text);
    this.numbers -= stored.length;
    this.chars -= text.length;
  }
}
