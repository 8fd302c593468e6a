import { connect } from 'node:net';

/** A response read off the socket as it arrived: status, lower-cased headers and the body text. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends bytes exactly as given (a bad Host, a Content-Length the body never reaches, an unknown method) and reads the
 * answer until the server closes the connection. Resolves `null` when the server closed it without an answer.
 */
export function rawRequest(port: number, head: string, body: string | Buffer = ''): Promise<RawResponse | null> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? finish() : reject(error)));
    socket.once('close', finish);
    socket.write(head.replace(/\n/g, '\r\n') + (head.endsWith('\n\n') ? '' : '\r\n\r\n'));
    if (body.length > 0) socket.write(body);
    function finish() {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text === '') return resolve(null);
      const [headText = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = headText.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    }
  });
}

/** Runs the requests concurrently and returns their labels in the order they completed. */
export async function completionOrder(requests: Record<string, () => Promise<unknown>>): Promise<string[]> {
  const order: string[] = [];
  await Promise.all(Object.entries(requests).map(async ([label, run]) => {
    await run();
    order.push(label);
  }));
  return order;
}
