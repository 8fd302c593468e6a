// A progress display for the demo's waits (orchestrations, the projection): a spinner with the elapsed seconds on a
// terminal, a line with a dot per second elsewhere (a CI log, a pipe).
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export async function withProgress<T>(label: string, work: Promise<T>, out: NodeJS.WriteStream = process.stdout): Promise<T> {
  const started = Date.now();
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  let frame = 0;
  const timer = out.isTTY
    ? setInterval(() => out.write(`\r  ${FRAMES[frame++ % FRAMES.length]} ${label} ${seconds()} s`), 100)
    : setInterval(() => out.write('.'), 1000);
  if (!out.isTTY) out.write(`  … ${label} `);
  try {
    const result = await work;
    out.write(out.isTTY ? `\r  ✓ ${label} (${seconds()} s)\x1b[K\n` : ` done (${seconds()} s)\n`);
    return result;
  } catch (error) {
    out.write(out.isTTY ? `\r  ✗ ${label} (${seconds()} s)\x1b[K\n` : ` failed (${seconds()} s)\n`);
    throw error;
  } finally {
    clearInterval(timer);
  }
}
