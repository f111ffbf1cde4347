/**
 * A tar for a run on a swarm, split as it streams by: the files under the secrets folder are
 * kept aside (each is small: a swarm secret holds at most 500 KB) to become swarm secrets, and
 * everything else streams on, entry by entry, into the node's engine (the archive API). A
 * fixture of any size passes in bounded memory, as on one engine (src/pack/archive.ts); the
 * node's engine is called only once the archive holds something besides folders.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract, pack, type Header } from 'tar-stream';

export interface SecretEntry {
  /** The path below the secrets folder. */
  file: string;
  header: Header;
  body: Buffer;
}

/**
 * Streams `tar` through: entries under `secretDir` (e.g. `run/secrets/`, no leading slash) that
 * are files are returned, the folders leading to it dropped, the rest handed to `send` as one
 * tar stream (send is not called when the rest is only folders, or nothing).
 */
export async function splitSecrets(tar: Buffer | Readable, secretDir: string | undefined, send: (rest: Readable) => Promise<void>): Promise<SecretEntry[]> {
  const secrets: SecretEntry[] = [];
  const ex = extract();
  const out = pack();
  let sending: Promise<void> | undefined;
  const start = () => {
    if (sending) return;
    sending = send(out as unknown as Readable);
    // a refused send ends the read of the source too
    sending.catch((err: unknown) => ex.destroy(err as Error));
  };
  ex.on('entry', (h, stream, next) => {
    const name = h.name.replace(/^\.?\//, '');
    if (secretDir !== undefined && name.startsWith(secretDir) && h.type === 'file') {
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => chunks.push(c as Buffer));
      stream.on('end', () => {
        secrets.push({ file: name.slice(secretDir.length), header: h, body: Buffer.concat(chunks) });
        next();
      });
      return;
    }
    if (secretDir !== undefined && secretDir.startsWith(name)) {
      stream.on('end', () => next());
      stream.resume();
      return;
    }
    if (h.type !== 'directory') start();
    const w = out.entry(h, (err) => next(err ?? undefined));
    stream.pipe(w);
  });
  const source = Buffer.isBuffer(tar) ? Readable.from([tar]) : tar;
  try {
    await pipeline(source, ex);
  } catch (err) {
    out.destroy();
    if (sending) await sending.catch(() => undefined);
    throw err;
  }
  out.finalize();
  if (sending) await sending;
  else out.destroy();
  return secrets;
}
