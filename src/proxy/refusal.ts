/**
 * The proxy's own answers (400, 403, 502, 504): a one-line `text/plain` body that starts with
 * "berth egress proxy:" and says why, so a user reading a failed download sees the cause.
 * CONNECT answers go to the raw socket; plain-HTTP answers through the ServerResponse.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export function refusalBody(reason: string): string {
  return `berth egress proxy: ${reason}\n`;
}

/** Answers a CONNECT on its raw socket and closes it. */
export function refuseSocket(socket: Duplex, status: number, reason: string): void {
  const body = refusalBody(reason);
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'Content-Type: text/plain; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** Answers a plain-HTTP request. */
export function refuseResponse(res: ServerResponse, status: number, reason: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = refusalBody(reason);
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}
