// A progress display for the demo's waits (orchestrations, the projection): a spinner with the elapsed seconds on a
// terminal, the label and a dot per second elsewhere (a CI log, a pipe).
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export interface ProgressOptions {
  /** Show nothing for waits shorter than this (ms): a brief wait is not worth a line. Default 0: always shown. */
  after?: number;
  out?: NodeJS.WriteStream;
}

export async function withProgress<T>(label: string, work: Promise<T>, options: ProgressOptions = {}): Promise<T> {
  const { after = 0, out = process.stdout } = options;
  const started = Date.now();
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  let shown = false;
  let frame = 0;
  const tick = () => {
    if (out.isTTY) out.write(`\r  ${FRAMES[frame++ % FRAMES.length]} ${label} ${seconds()} s`);
    else out.write(shown ? '.' : `  … ${label} `);
    shown = true;
  };
  let timer: NodeJS.Timeout | undefined;
  const begin = () => {
    tick();
    timer = setInterval(tick, out.isTTY ? 100 : 1000);
  };
  const delay = after > 0 ? setTimeout(begin, after) : undefined;
  if (delay === undefined) begin();
  const end = (mark: string, word: string) => {
    clearTimeout(delay);
    clearInterval(timer);
    if (shown) out.write(out.isTTY ? `\r  ${mark} ${label} (${seconds()} s)\x1b[K\n` : ` ${word} (${seconds()} s)\n`);
  };
  try {
    const result = await work;
    end('✓', 'done');
    return result;
  } catch (error) {
    end('✗', 'failed');
    throw error;
  }
}
