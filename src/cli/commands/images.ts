/**
 * `berth images [NAME...|-l SEL] [-o wide|json]`: each image the specs need (the attempts', their
 * sidecars', their graders', the FROM images of their builds), as the engine holds it: reference, id, digest, Present / Missing /
 * Pulling (bytes) / PullBackOff (why), size, how many attempts need it, when one last ran from it,
 * and whether berth brought it (pulled it: the puller's file says so).
 *
 * `berth pull [NAME...|-l SEL|--all]`: pulls now what those attempts need (policy Never left
 * out), --max-pulls at a time, with progress on stderr; exit 0 when every image is present, 1
 * otherwise. For CI warm-up: it needs no lock (it changes no attempt), credentials as reconcile.
 */
import { DEFAULTS, EXIT, IMAGE_STATES, LABELS, type ImageState } from '../../constants';
import { builtBy } from '../../build/records';
import { readRemovedImages } from '../../controller/image-gc';
import type { ImageSummary } from '../../engine/types';
import { imageIndex, resolveImage } from '../../observe/images';
import type { ImagePullState } from '../../plan/pull-gate';
import { registryConfigPath, RegistryCredentials } from '../../registry/credentials';
import { showBytes } from '../../util/bytes';
import { systemClock } from '../../util/clock';
import type { Context } from '../context';
import { diag, plural } from '../diag';
import { bytesOf, pullsUnderWay, readPulls } from '../pull-lines';
import { chooseAttempts } from './choose';
import { table } from './shared';
import { collectRows, type Row } from './get';

export interface ImageRow {
  ref: string;
  state: ImageState;
  /** Why it is in back-off, or the bytes of a pull under way. */
  detail?: string;
  id?: string;
  digest?: string;
  size?: number;
  attempts: number;
  lastUsed?: string;
  broughtByBerth: boolean;
  policy: string;
}

/** The policy column of an image built from a Dockerfile: `berth pull` leaves it out. */
const BUILT_POLICY = 'built';

/** The images the rows' specs need (a build's FROM images among them), with the attempts that need each and the policy they ask. */
function needed(rows: readonly Row[]): Map<string, { attempts: Set<string>; policy: string; lastUsed?: string }> {
  const out = new Map<string, { attempts: Set<string>; policy: string; lastUsed?: string }>();
  const add = (ref: string, name: string, policy: string, used: string | undefined) => {
    const e = out.get(ref) ?? { attempts: new Set<string>(), policy };
    e.attempts.add(name);
    if (used && (!e.lastUsed || used > e.lastUsed)) e.lastUsed = used;
    out.set(ref, e);
  };
  for (const r of rows) {
    const s = r.spec;
    if (!s) continue;
    const used = r.status?.image?.ref === s.image ? (r.status.startedAt ?? undefined) : undefined;
    // an image built from a Dockerfile is built, never pulled (policy BUILT_POLICY); its FROM images are pulled as any
    add(s.image, r.name, s.build ? BUILT_POLICY : s.pullPolicies.main, used);
    for (const c of s.sidecars) add(c.image, r.name, s.pullPolicies.sidecars[c.name] ?? DEFAULTS.imagePullPolicy, undefined);
    if (s.grade?.image) add(s.grade.image, r.name, s.grade.build ? BUILT_POLICY : s.pullPolicies.grade, undefined);
    for (const f of s.build?.from ?? []) add(f, r.name, s.pullPolicies.main, undefined);
    for (const f of s.grade?.build?.from ?? []) add(f, r.name, s.pullPolicies.grade, undefined);
  }
  return out;
}

async function imageRows(ctx: Context, rows: readonly Row[]): Promise<ImageRow[]> {
  const engine = ctx.engine();
  const list: ImageSummary[] = await engine.images.list([]);
  const index = imageIndex(list);
  const pulls = readPulls(ctx.stateDir, ctx.instance);
  // what image GC removed last, by reference (controller/image-gc.ts)
  const removed = new Map(readRemovedImages(ctx.stateDir, ctx.instance).map((r) => [r.ref, r]));
  const out: ImageRow[] = [];
  for (const [ref, n] of [...needed(rows)].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const held = resolveImage(index, ref);
    const p: ImagePullState | undefined = pulls.get(ref);
    const state: ImageState = p?.pulling ? IMAGE_STATES.pulling : held ? IMAGE_STATES.present : p?.failed ? IMAGE_STATES.pullBackOff : IMAGE_STATES.missing;
    const gone = removed.get(ref);
    const detail = p?.pulling
      ? bytesOf(p.pulling)
      : state === IMAGE_STATES.pullBackOff
        ? p?.failed?.latest
        : state === IMAGE_STATES.missing && gone
          ? `removed by image GC ${gone.at}`
          : undefined;
    const summary = held ? list.find((i) => i.id === held.id) : undefined;
    const digest = held?.repoDigests.find((d) => d.startsWith(`${ref.replace(/[:@][^/]*$/, '')}@`)) ?? held?.repoDigests[0];
    out.push({
      ref,
      state,
      ...(detail ? { detail } : {}),
      ...(held ? { id: held.id } : {}),
      ...(digest ? { digest: digest.slice(digest.indexOf('@') + 1) } : {}),
      ...(summary?.size !== undefined ? { size: summary.size } : {}),
      attempts: n.attempts.size,
      ...(n.lastUsed ? { lastUsed: n.lastUsed } : {}),
      // pulled by this instance (its pulls file), or built by it (its build record names the instance and this image)
      broughtByBerth:
        (p?.pulled !== undefined && held?.id === p.pulled.id) ||
        (summary?.labels[LABELS.build] !== undefined && builtBy(ctx.stateDir, summary.labels[LABELS.build] as string, summary.id, ctx.instance) !== undefined),
      policy: n.policy,
    });
  }
  return out;
}

async function chosen(ctx: Context, names: string[], selector: string[] | undefined, all: boolean): Promise<Row[] | number> {
  if (!names.length && !selector?.length) return collectRows(ctx);
  return chooseAttempts(ctx, 'images', names, selector ?? [], all || undefined);
}

export async function runImages(ctx: Context, names: string[], o: { selector?: string[]; output?: string }): Promise<number> {
  const rows = await chosen(ctx, names, o.selector, false);
  if (typeof rows === 'number') return rows;
  const images = await imageRows(ctx, rows);
  if (o.output === 'json') {
    ctx.io.out(`${JSON.stringify({ images }, null, 2)}\n`);
    return EXIT.ok;
  }
  const wide = o.output === 'wide';
  const head = ['IMAGE', 'STATE', 'ID', 'SIZE', 'ATTEMPTS', ...(wide ? ['DIGEST', 'LAST USED', 'POLICY'] : []), 'BY BERTH'];
  const body = images.map((i) => [
    i.ref,
    i.detail ? `${i.state} (${i.detail})` : i.state,
    i.id ? i.id.slice(7, 19) : '-',
    i.size !== undefined ? showBytes(i.size) : '-',
    String(i.attempts),
    ...(wide ? [i.digest ?? '-', i.lastUsed ?? '-', i.policy] : []),
    i.broughtByBerth ? 'yes' : 'no',
  ]);
  ctx.io.out(table([head, ...body]));
  return EXIT.ok;
}

export async function runPull(
  ctx: Context,
  names: string[],
  o: { selector?: string[]; all?: boolean; maxPulls?: number; registryConfig?: string },
): Promise<number> {
  const rows = await chooseAttempts(ctx, 'pull', names, o.selector ?? [], o.all === true);
  if (typeof rows === 'number') return rows;
  const engine = ctx.engine();
  if (!engine.images.pull) {
    diag(ctx, 'error', 'this backend cannot pull images');
    return EXIT.failed;
  }
  const refs = [...needed(rows)]
    .filter(([, n]) => n.policy !== 'Never' && n.policy !== BUILT_POLICY)
    .map(([ref, n]) => ({ ref, attempts: [...n.attempts].sort(), runs: [] }));
  const { Puller, pullsFile } = require('../../controller/puller') as typeof import('../../controller/puller');
  const puller = new Puller({
    engine,
    credentials: new RegistryCredentials({ file: registryConfigPath(ctx.env, o.registryConfig), env: ctx.env }),
    maxPulls: o.maxPulls ?? DEFAULTS.maxPulls,
    clock: systemClock,
    log: ctx.log,
    stateFile: pullsFile(ctx.stateDir, ctx.instance),
    onSettled: () => undefined,
  });
  const started = Date.now();
  const timer = setInterval(() => {
    const line = pullsUnderWay(puller.view());
    if (line) ctx.io.err(`[${Math.round((Date.now() - started) / 1000)}s] ${line}\n`);
  }, 2000);
  try {
    puller.want(refs);
    await puller.drained();
  } finally {
    clearInterval(timer);
    await puller.close();
  }
  let failed = 0;
  for (const { ref } of refs) {
    const s = puller.view().get(ref);
    if (s?.failed) {
      failed++;
      ctx.io.out(`${ref}: failed: ${s.failed.latest}\n`);
    } else ctx.io.out(`${ref}: pulled${s?.pulled?.digest ? ` (${s.pulled.digest})` : ''}\n`);
  }
  ctx.io.err(`${plural(refs.length - failed, 'image')} present, ${failed} failed\n`);
  return failed ? EXIT.failed : EXIT.ok;
}
