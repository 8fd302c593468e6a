/**
 * The part of Emscripten's NODEFS (PGlite's file system for a data folder) that the size cache replaces. A stream is an
 * open file; `node` is the file, shared by every stream opened on it.
 */
interface Stream {
  node: object;
  position: number;
}
export interface NodeFs {
  stream_ops: {
    llseek(stream: Stream, offset: number, whence: number): number;
    write(stream: Stream, buffer: Uint8Array, offset: number, length: number, position: number, canOwn?: boolean): number;
    open(stream: Stream): void;
    setattr(stream: Stream, attr: { size?: number }): void;
  };
  node_ops: { setattr(node: object, attr: { size?: number }): void };
}

const SEEK_END = 2;
const cached = Symbol('file sizes cached');

/**
 * Keeps the size of each file of a PGlite data folder in memory, so that a seek to a file's end does not ask the
 * operating system. PostgreSQL finds a relation's length by seeking to its end (`mdnblocks`) whenever a scan or an
 * index starts, and NODEFS answers each with an `fstat` and a Stats object: about 270 a search over a user of 10,000
 * turns (README, Fact search). The cache is exact because PGlite holds its data folder alone (PostgreSQL's lock
 * file) and every change of a file's length passes here: a write extends it, and a truncation or an open (which may
 * truncate) forgets it, to be read again at the next seek. A write that fails forgets it too.
 */
export function cacheFileSizes(nodefs: NodeFs): void {
  const ops = nodefs.stream_ops as NodeFs['stream_ops'] & { [cached]?: true };
  if (ops[cached]) return;
  ops[cached] = true;
  const sizes = new WeakMap<object, number>();
  const { llseek, write, open, setattr } = ops;
  const nodeSetattr = nodefs.node_ops.setattr;

  ops.llseek = (stream, offset, whence) => {
    if (whence !== SEEK_END) return llseek(stream, offset, whence);
    let size = sizes.get(stream.node);
    if (size === undefined) {
      size = llseek(stream, 0, SEEK_END);
      sizes.set(stream.node, size);
    }
    return llseek(stream, offset + size, 0);
  };
  ops.write = (stream, buffer, offset, length, position, canOwn) => {
    let written: number;
    try {
      written = write(stream, buffer, offset, length, position, canOwn);
    } catch (error) {
      sizes.delete(stream.node);
      throw error;
    }
    const size = sizes.get(stream.node);
    if (size !== undefined) sizes.set(stream.node, Math.max(size, position + written));
    return written;
  };
  ops.open = (stream) => {
    sizes.delete(stream.node);
    open(stream);
  };
  ops.setattr = (stream, attr) => {
    if (attr.size !== undefined) sizes.delete(stream.node);
    setattr(stream, attr);
  };
  nodefs.node_ops.setattr = (node, attr) => {
    if (attr.size !== undefined) sizes.delete(node);
    nodeSetattr(node, attr);
  };
}
