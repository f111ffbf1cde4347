/**
 * An instance is bound to its source (docs/CONTRACT.md, "An instance is bound to its source"):
 * the first reconcile of an instance records where its specs come from, a specs folder's real
 * path or a git URL and path, on the engine, in the labels of the volume
 * `berth.source.<instance>` (constants.ts `bindingVolumeName`). It lives beside the instance's
 * resources, so it outlives the state folder, and carries neither `dev.berth.managed` nor
 * `dev.berth.instance`: observe, garbage collection and clean's sweep never see it.
 *
 * A volume's labels never change, so a move removes the volume and makes it again. Both happen
 * while the caller holds the instance's engine lock (engine-lock.ts): no other berth writes the
 * binding meanwhile. Readers (`plan`) only read it.
 */
import { BINDING_LABELS, bindingVolumeName } from '../constants';
import { isNotFound } from '../engine/errors';
import type { Engine, Labels } from '../engine/types';

/** Where an instance's specs come from. A git URL never holds credentials (git/url.ts refuses them). */
export type InstanceSource = { kind: 'dir'; path: string } | { kind: 'git'; url: string; path: string };

export interface Binding {
  source: InstanceSource;
  /** ISO time of the bind (or the last move). */
  boundAt: string;
  /** The host berth ran on then, for the message only. */
  hostname?: string;
}

/** "the specs folder /x/specs", "git https://h/r.git (path evals)", "git https://h/r.git (its root)" */
export function describeSource(s: InstanceSource): string {
  if (s.kind === 'dir') return `the specs folder ${s.path}`;
  return `git ${s.url} (${s.path === '' ? 'its root' : `path ${s.path}`})`;
}

export function sameSource(a: InstanceSource, b: InstanceSource): boolean {
  if (a.kind === 'dir' || b.kind === 'dir') return a.kind === b.kind && a.path === b.path;
  return a.url === b.url && a.path === b.path;
}

export class BindingUnreadableError extends Error {
  readonly code = 'BindingUnreadable';
  constructor(
    readonly volume: string,
    readonly instance: string,
  ) {
    super(
      `volume ${volume} holds instance "${instance}"'s source binding name but not berth's binding labels; if berth did not make it, remove it (docker volume rm ${volume}) and reconcile again`,
    );
    this.name = 'BindingUnreadableError';
  }
}

/** The instance's binding; undefined when it has none (never reconciled since berth kept bindings, or cleaned). */
export async function readBinding(engine: Engine, instance: string): Promise<Binding | undefined> {
  const volume = bindingVolumeName(instance);
  let labels: Labels;
  try {
    labels = (await engine.volumes.inspect(volume)).labels;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const binding = parse(labels, instance);
  if (!binding) throw new BindingUnreadableError(volume, instance);
  return binding;
}

/** Binds the instance to `source`, replacing any binding it had. The caller holds the instance's engine lock. */
export async function writeBinding(engine: Engine, instance: string, source: InstanceSource, o: { now: Date; hostname: string }): Promise<void> {
  const volume = bindingVolumeName(instance);
  await engine.volumes.remove(volume);
  await engine.volumes.create({
    name: volume,
    labels: {
      [BINDING_LABELS.binding]: instance,
      [BINDING_LABELS.kind]: source.kind,
      [BINDING_LABELS.path]: source.path,
      ...(source.kind === 'git' ? { [BINDING_LABELS.url]: source.url } : {}),
      [BINDING_LABELS.boundAt]: o.now.toISOString(),
      [BINDING_LABELS.hostname]: o.hostname,
    },
  });
}

/** Forgets the instance's binding (`clean`, once nothing of the instance is left); true when there was one. */
export async function removeBinding(engine: Engine, instance: string): Promise<boolean> {
  return engine.volumes.remove(bindingVolumeName(instance));
}

function parse(labels: Labels, instance: string): Binding | undefined {
  if (labels[BINDING_LABELS.binding] !== instance) return undefined;
  const kind = labels[BINDING_LABELS.kind];
  const path = labels[BINDING_LABELS.path];
  const boundAt = labels[BINDING_LABELS.boundAt] ?? '?';
  const hostname = labels[BINDING_LABELS.hostname];
  const extra = hostname !== undefined ? { hostname } : {};
  if (kind === 'dir' && path) return { source: { kind, path }, boundAt, ...extra };
  const url = labels[BINDING_LABELS.url];
  if (kind === 'git' && url && path !== undefined) return { source: { kind, url, path }, boundAt, ...extra };
  return undefined;
}
