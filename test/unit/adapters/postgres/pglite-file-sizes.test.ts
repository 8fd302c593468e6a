import { describe, expect, it } from 'vitest';
import { cacheFileSizes } from '../../../../shared/adapters/postgres/pglite-file-sizes.js';

const SEEK_SET = 0;
const SEEK_CUR = 1;
const SEEK_END = 2;

/** NODEFS's file operations over in-memory files, counting the sizes it asks the operating system for (its fstat). */
function fakeNodefs() {
  const files = new Map<object, number>();
  const asked = { sizes: 0 };
  const nodefs = {
    stream_ops: {
      llseek(stream: { node: object; position: number }, offset: number, whence: number) {
        const at = whence === SEEK_END ? (asked.sizes++, offset + files.get(stream.node)!) : whence === SEEK_CUR ? stream.position + offset : offset;
        if (at < 0) throw new Error('EINVAL');
        return at;
      },
      write(stream: { node: object }, _buffer: Uint8Array, _offset: number, length: number, position: number) {
        if (length < 0) throw new Error('EIO');
        files.set(stream.node, Math.max(files.get(stream.node)!, position + length));
        return length;
      },
      open(stream: { node: object }) {
        files.set(stream.node, files.get(stream.node) ?? 0);
      },
      setattr(stream: { node: object }, attr: { size?: number }) {
        if (attr.size !== undefined) files.set(stream.node, attr.size);
      },
    },
    node_ops: {
      setattr(node: object, attr: { size?: number }) {
        if (attr.size !== undefined) files.set(node, attr.size);
      },
    },
  };
  const file = (size: number) => {
    const node = { mode: 0o100644 };
    files.set(node, size);
    return { node, position: 0 };
  };
  return { nodefs, asked, file, files };
}

describe('PGlite data files: sizes kept in memory (cacheFileSizes)', () => {
  it('asks for a file size once, then answers seeks to the end from memory, offset included', () => {
    const { nodefs, asked, file } = fakeNodefs();
    cacheFileSizes(nodefs);
    const stream = file(8192);
    expect(nodefs.stream_ops.llseek(stream, 0, SEEK_END)).toBe(8192);
    expect(nodefs.stream_ops.llseek(stream, -100, SEEK_END)).toBe(8092);
    expect(() => nodefs.stream_ops.llseek(stream, -9000, SEEK_END)).toThrow('EINVAL');
    expect(asked.sizes).toBe(1);
    expect(nodefs.stream_ops.llseek(stream, 5, SEEK_SET)).toBe(5);
    // Every stream of the file shares its size.
    expect(nodefs.stream_ops.llseek({ node: stream.node, position: 0 }, 0, SEEK_END)).toBe(8192);
    expect(asked.sizes).toBe(1);
  });

  it('grows the size with a write past the end and keeps it for a write within', () => {
    const { nodefs, asked, file } = fakeNodefs();
    cacheFileSizes(nodefs);
    const stream = file(8192);
    nodefs.stream_ops.llseek(stream, 0, SEEK_END);
    nodefs.stream_ops.write(stream, new Uint8Array(), 0, 8192, 8192);
    expect(nodefs.stream_ops.llseek(stream, 0, SEEK_END)).toBe(16384);
    nodefs.stream_ops.write(stream, new Uint8Array(), 0, 100, 0);
    expect(nodefs.stream_ops.llseek(stream, 0, SEEK_END)).toBe(16384);
    expect(asked.sizes).toBe(1);
  });

  it.each([
    ['a truncation through the stream', (f: ReturnType<typeof fakeNodefs>, s: { node: object }) => f.nodefs.stream_ops.setattr(s, { size: 4096 })],
    ['a truncation by path', (f: ReturnType<typeof fakeNodefs>, s: { node: object }) => f.nodefs.node_ops.setattr(s.node, { size: 4096 })],
    ['an open, which may truncate', (f: ReturnType<typeof fakeNodefs>, s: { node: object }) => (f.nodefs.stream_ops.open(s), f.files.set(s.node, 4096))],
    ['a write that failed', (f: ReturnType<typeof fakeNodefs>, s: { node: object }) => (expect(() => f.nodefs.stream_ops.write(s, new Uint8Array(), 0, -1, 0)).toThrow('EIO'), f.files.set(s.node, 4096))],
  ])('forgets the size after %s and asks again', (_, change) => {
    const fake = fakeNodefs();
    cacheFileSizes(fake.nodefs);
    const stream = fake.file(8192);
    fake.nodefs.stream_ops.llseek(stream, 0, SEEK_END);
    change(fake, stream);
    expect(fake.nodefs.stream_ops.llseek(stream, 0, SEEK_END)).toBe(4096);
    expect(fake.asked.sizes).toBe(2);
  });

  it('keeps a change of anything but the size, and installs once', () => {
    const { nodefs, asked, file } = fakeNodefs();
    cacheFileSizes(nodefs);
    cacheFileSizes(nodefs);
    const stream = file(8192);
    nodefs.stream_ops.llseek(stream, 0, SEEK_END);
    nodefs.stream_ops.setattr(stream, {});
    nodefs.node_ops.setattr(stream.node, {});
    nodefs.stream_ops.write(stream, new Uint8Array(), 0, 8192, 8192);
    expect(nodefs.stream_ops.llseek(stream, 0, SEEK_END)).toBe(16384);
    expect(asked.sizes).toBe(1);
  });
});
