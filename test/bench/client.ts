import http from 'node:http';

export interface Reply {
  status: number;
  body: string;
}

/** A tiny JSON-over-HTTP client; two implementations so the bench can use the faster one. */
export interface Client {
  readonly name: string;
  send(method: 'GET' | 'POST', path: string, body?: string): Promise<Reply>;
  close(): void;
}

/** Node's global fetch (undici, keep-alive by default). */
export function fetchClient(baseUrl: string): Client {
  return {
    name: 'fetch (undici keep-alive)',
    async send(method, path, body) {
      const res = await fetch(`${baseUrl}${path}`, { method, ...(body !== undefined && { body, headers: { 'content-type': 'application/json' } }) });
      return { status: res.status, body: await res.text() };
    },
    close() {},
  };
}

/** node:http with a keep-alive agent, one socket per in-flight request. */
export function nodeHttpClient(baseUrl: string, maxSockets: number): Client {
  const base = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  return {
    name: 'node:http Agent(keepAlive)',
    send(method, path, body) {
      const attempt = (retry: boolean): Promise<Reply> =>
        new Promise<Reply>((resolve, reject) => {
          const headers: http.OutgoingHttpHeaders = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
          const req = http.request({ agent, host: base.hostname, port: base.port, method, path: `${base.pathname}${path}`, headers }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
            res.on('error', reject);
          });
          req.on('error', (error: NodeJS.ErrnoException) => {
            // The server may close an idle keep-alive socket just as it is reused (Node's documented race): retry once.
            if (retry && req.reusedSocket && error.code === 'ECONNRESET') attempt(false).then(resolve, reject);
            else reject(error);
          });
          req.end(body);
        });
      return attempt(true);
    },
    close() {
      agent.destroy();
    },
  };
}
