/**
 * POST /v1/attempts and DELETE /v1/attempts/NAME: an attempt (or an AttemptSet) made or removed
 * from a spec document as a file in the specs folder would be: the document is checked as the
 * loader checks a file at `<specs>/berth-api/<name>.yaml` (API.specsFolder: relative paths in it
 * resolve from there and stay inside the specs folder), then written there atomically; the
 * controller loads it as any file (its watch, or a reload asked for). DELETE removes only such a
 * file: an attempt a user's file declares is theirs to remove.
 */
import { randomBytes } from 'node:crypto';
import { constants as C, promises as fsp } from 'node:fs';
import path from 'node:path';
import { API } from '../constants';
import { loadText } from '../spec/load-file';
import { loadContext, rootsOf, type LoadReport } from '../spec/loader';
import { HttpError } from './body';

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export interface Made {
  name: string;
  kind: 'Attempt' | 'AttemptSet';
  /** The file, relative to the specs folder. */
  file: string;
  /** The attempts it declares (a set's children). */
  attempts: string[];
}

/** Names `load` declares, and where. */
function declared(load: LoadReport | undefined, name: string): string | undefined {
  if (!load) return undefined;
  const spec = load.specs.find((s) => s.spec.name === name);
  if (spec) return spec.relFile;
  const set = load.sets?.get(name);
  if (set) return set.policy.source.file;
  if (load.protectedNames.has(name)) return 'an invalid spec file';
  return undefined;
}

export async function createFromDocument(specsDir: string, resultsRoot: string, body: Buffer, load: LoadReport | undefined): Promise<Made> {
  const text = body.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(body)) throw new HttpError(400, 'the document is not UTF-8');
  const root = path.resolve(specsDir);
  const folder = path.join(root, API.specsFolder);
  // checked as the file it becomes; its name is known only once it is read
  const probe = path.join(folder, 'document.yaml');
  const roots = await rootsOf(root, await loadContext(resultsRoot));
  const first = await loadText(text, { abs: probe, rel: `${API.specsFolder}/document.yaml` }, `${API.specsFolder}/(request body)`, roots);
  if (first.docs.length !== 1) throw new HttpError(400, `one spec document expected, found ${first.docs.length}`);
  const doc = first.docs[0] as (typeof first.docs)[number];
  const name = doc.name;
  if (!name || !NAME_RE.test(name)) throw new HttpError(400, 'metadata.name: a DNS-1123 label (lowercase letters, digits, -; at most 63) is required');
  const rel = `${API.specsFolder}/${name}.yaml`;
  const file = path.join(folder, `${name}.yaml`);
  const outcome = await loadText(text, { abs: file, rel }, rel, roots);
  const d = outcome.docs[0];
  const errors = [...outcome.errors, ...(d?.errors ?? []), ...(d?.set?.children ?? []).flatMap((c) => c.errors)];
  if (errors.length) throw new HttpError(400, `the document is not a valid spec (${errors.length} error${errors.length === 1 ? '' : 's'})`, errors);
  const attempts = d?.set ? d.set.children.map((c) => c.name) : [name];
  for (const n of [name, ...attempts]) {
    const where = declared(load, n);
    if (where !== undefined) throw new HttpError(409, `${n} is declared already (${where}): DELETE /v1/attempts/${name} removes one the API made`);
  }
  const taken = await fsp.lstat(file).catch(() => undefined);
  if (taken) throw new HttpError(409, `${rel} exists already: DELETE /v1/attempts/${name} first`);
  await fsp.mkdir(folder, { recursive: true, mode: 0o755 });
  const st = await fsp.lstat(folder);
  if (!st.isDirectory()) throw new HttpError(500, `${API.specsFolder} in the specs folder is not a folder`);
  // written whole, then renamed into place: the watch never reads half a document (a dot-file is not a spec)
  const tmp = path.join(folder, `.${name}.yaml.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await fsp.open(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o644);
  try {
    await fh.writeFile(body);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.rename(tmp, file);
  return { name, kind: d?.set ? 'AttemptSet' : 'Attempt', file: rel, attempts };
}

/** Removes the file the API made for `name`; 404 when there is none, 409 when a user's file declares it. */
export async function deleteDocument(specsDir: string, name: string, load: LoadReport | undefined): Promise<{ name: string; file: string }> {
  const rel = `${API.specsFolder}/${name}.yaml`;
  const file = path.join(path.resolve(specsDir), rel);
  const st = await fsp.lstat(file).catch(() => undefined);
  if (!st?.isFile()) {
    const where = declared(load, name);
    if (where !== undefined) throw new HttpError(409, `${name} is declared in ${where}, not by the API: remove it there`);
    throw new HttpError(404, `no attempt ${name} made by the API`);
  }
  await fsp.unlink(file);
  return { name, file: rel };
}
