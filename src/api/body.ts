/**
 * Bodies of the API's requests, read within bounds: a declared length past the bound is refused
 * before a byte is read (413), a body without one is counted as it comes and cut off at the
 * bound; nothing is held but what fits.
 */
import type http from 'node:http';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A spec document's errors (file:line:col, field, message), for the answer. */
    readonly errors?: unknown[],
  ) {
    super(message);
  }
}

/** The request's body, whole, at most `max` bytes. */
export async function readBody(req: http.IncomingMessage, max: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > max) throw new HttpError(413, `the body is ${declared} bytes; at most ${max} are taken`);
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req) {
    n += (c as Buffer).length;
    if (n > max) throw new HttpError(413, `the body is over ${max} bytes; at most ${max} are taken`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The request's body as a JSON object. */
export async function readJson(req: http.IncomingMessage, max: number): Promise<Record<string, unknown>> {
  const body = await readBody(req, max);
  if (body.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new HttpError(400, `the body is not JSON: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new HttpError(400, 'the body must be a JSON object');
  return v as Record<string, unknown>;
}
