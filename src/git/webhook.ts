/**
 * The webhook of a git source (`--webhook-addr host:port`, controller only): a POST whose body
 * carries a valid HMAC-SHA256 signature in GitHub's form (`X-Hub-Signature-256: sha256=<hex>`,
 * keyed with the secret from `--webhook-secret-file` or `--webhook-secret-env`) triggers a fetch
 * at once and is answered 202. Anything else changes nothing: no or a wrong signature 401, a body
 * over WEBHOOK_MAX_BYTES 413, another method 405. Signatures are compared in constant time; the
 * body is only ever used to check the signature (what to fetch is berth's own configuration).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseAddr } from '../util/addr';

export const WEBHOOK_MAX_BYTES = 1024 * 1024;

/** Whether `header` is `sha256=<hex>` of HMAC-SHA256(secret, body). Constant time in the signature. */
export function validSignature(secret: string, body: Buffer, header: string | undefined): boolean {
  if (!header || !header.startsWith('sha256=')) return false;
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  const want = createHmac('sha256', secret).update(body).digest();
  return given.length === want.length && timingSafeEqual(given, want);
}

export async function serveWebhook(addr: string, secret: string, onPush: () => void): Promise<{ url: string; close(): Promise<void> }> {
  const { host, port } = parseAddr(addr, '--webhook-addr', '127.0.0.1:9465');
  const server = http.createServer((req, res) => {
    const text = (status: number, body: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(`${body}\n`);
    if (req.method !== 'POST') {
      req.resume();
      text(405, 'POST only', { allow: 'POST' });
      return;
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > WEBHOOK_MAX_BYTES) {
      req.resume();
      text(413, 'body too large', { connection: 'close' });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > WEBHOOK_MAX_BYTES) over = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      if (over) return text(413, 'body too large', { connection: 'close' });
      const sig = req.headers['x-hub-signature-256'];
      if (!validSignature(secret, Buffer.concat(chunks), Array.isArray(sig) ? sig[0] : sig)) return text(401, 'bad or missing X-Hub-Signature-256');
      onPush();
      text(202, 'fetching');
    });
    req.on('error', () => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  return {
    url: `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
