/** `berth describe NAME`: spec summary, status, grades, resources on the engine, attestation, history. */
import path from 'node:path';
import { buildTag, EXEC, EXIT, LABELS, REASONS } from '../../constants';
import { describeEngineError, isEngineDown } from '../../engine/errors';
import { imageIndex } from '../../observe/images';
import { buildLogPath, readBuildRecord } from '../../build/records';
import type { NormalizedBuild } from '../../spec/types';
import { instanceFilters } from '../../observe/snapshot';
import { tagMoves, tagMoveText } from '../../observe/tag-moves';
import { containerOwnership, imageLabels, recordedContainers } from '../../ownership';
import { heldBy } from '../../spec/held';
import { loadView } from './view-load';
import { type Context } from '../context';
import { formatIssue } from '../../spec/issue';
import { runGrades } from '../../sets/grade-state';
import { graderImage, gradeVerdict, gradeWhen } from '../../sets/grade-text';
import type { AttemptStatus, DiskLimit, GradeRecord } from '../../status/types';
import { showBytes } from '../../util/bytes';
import { pullText, readPulls } from '../pull-lines';
import { touchedText } from '../../touch/text';
import { touchedOf } from '../../touch/target';
import { age, table } from './shared';
import { eventsOf } from '../events';

export async function runDescribe(ctx: Context, name: string): Promise<number> {
  const [load, rec] = await Promise.all([loadView(ctx), ctx.store().get(name)]);
  const loaded = load.specs.find((s) => s.spec.name === name);
  const damaged = rec ? undefined : ctx.store().damagedRecordOf(name);
  // Its own errors, those of an AttemptSet (invalid as a whole) that declares it, or its file's (spec/held.ts).
  const errors = heldBy(load, ctx.specsDir, name, rec?.source);
  if (!loaded && !rec && !ctx.store().damaged().has(name) && !load.protectedNames.has(name)) {
    ctx.io.err(`berth: attempt ${JSON.stringify(name)} not found\n`);
    return EXIT.failed;
  }
  const now = Date.now();
  const out: string[] = [];
  const kv = (k: string, v: string | number | undefined | null) => out.push(`${(k + ':').padEnd(16)}${v === undefined || v === null || v === '' ? '-' : v}`);
  kv('Name', name);
  kv('Instance', ctx.instance);
  if (loaded) {
    const s = loaded.spec;
    if (loaded.held) {
      // its set's file (or its fixture) is broken: this is its last good spec (spec/last-good.ts)
      kv('Spec', 'HELD at its last good spec (shown below): its file is broken; what runs goes on under it, nothing new starts until it is fixed');
      for (const e of loaded.held) out.push(`                ${formatIssue(e)}`);
    }
    kv('Spec file', `${loaded.source.file}:${loaded.source.line}`);
    kv('Spec hash', loaded.hash.slice(0, 16));
    if (loaded.revision) kv('Revision', `${loaded.revision} (in force)`);
    if (loaded.set) {
      const m = loaded.set;
      kv('AttemptSet', `${m.set.name} (${m.set.axes.map((a) => `${a}=${m.coords[a] ?? ''}`).join(', ')})`);
    }
    kv(
      'Labels',
      Object.entries(s.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(', '),
    );
    kv('Image', s.image);
    // images built from a Dockerfile: what was built from where, how its last build ended, with which builder
    for (const [what, b] of [
      ['Build', s.build],
      ['Grade build', s.grade?.build],
    ] as const)
      if (b) kv(what, buildText(ctx.stateDir, b));
    kv(
      'Command',
      s.sandbox
        ? "none: a sandbox (berth's own process waits for exec and cp, until berth release or its deadline)"
        : s.command
          ? JSON.stringify(s.command)
          : '(image default)',
    );
    kv('Working dir', s.workingDir);
    kv('Network', s.network.mode + (s.network.egress.length ? ` (egress: ${s.network.egress.join(', ')})` : ''));
    kv('Resources', `cpus=${s.resources.cpus ?? 'unlimited'} memory=${s.resources.memoryBytes ?? 'unlimited'} pids=${s.resources.pids}`);
    kv('Deadline', s.deadlineSeconds !== null ? `${s.deadlineSeconds}s (spec)` : 'none in the spec (reconcile --default-deadline applies, if given)');
    kv('Results kept', `at most ${s.harvest.maxBytes} bytes of files and ${s.harvest.maxFiles} entries per run (spec.harvest; past them: ResultsTruncated)`);
    kv('Retries', s.retries);
    kv('TTL', s.ttlSecondsAfterFinished !== null ? `${s.ttlSecondsAfterFinished}s after finished` : 'none');
    if (s.grade) {
      const gr = s.grade;
      kv(
        'Grade',
        `${gr.image ?? "the attempt's image"} ${JSON.stringify(gr.command)}` +
          (gr.protect.length ? `, protect ${gr.protect.join(' ')}` : '') +
          (gr.when === 'succeeded' ? ', succeeded runs only' : '') +
          (gr.deadlineSeconds !== null ? `, deadline ${gr.deadlineSeconds}s` : ''),
      );
    }
    kv('Secrets', s.secrets.map((x) => `${x.name} (${x.fromEnv !== undefined ? `env ${x.fromEnv}` : 'file'})`).join(', '));
    if (rec && rec.specHash && rec.specHash !== loaded.hash) out.push('                (the spec changed since this run: reconcile will replace it)');
  } else if (load.protectedNames.has(name)) {
    kv('Spec', 'INVALID: what runs under this name is left as it is until the spec is fixed');
    for (const e of errors) out.push(`                ${formatIssue(e)}`);
  } else if (rec && errors.length) {
    // its file (or a folder above it) cannot be read far enough to name what it declares
    kv('Spec', `BROKEN: ${rec.source} cannot be read; what runs under this name keeps its last good spec, left as it is until the file is fixed`);
    for (const e of errors) out.push(`                ${formatIssue(e)}`);
  } else {
    kv('Spec', 'none (the spec was deleted; reconcile will collect it)');
  }
  out.push('');
  if (rec) {
    if (rec.revision) kv('Created from', `revision ${rec.revision}`);
    kv('Phase', rec.phase);
    kv('Reason', rec.reason);
    kv('Message', rec.message);
    // an image being pulled or whose pull failed: where its pull stands (the puller's file)
    if (loaded && (rec.reason === REASONS.pulling || rec.reason === REASONS.imagePullBackOff)) {
      const pulls = readPulls(ctx.stateDir, ctx.instance);
      for (const ref of [loaded.spec.image, ...loaded.spec.sidecars.map((c) => c.image)]) {
        const t = pullText(pulls.get(ref), now);
        if (t) kv('Pull', `${ref}: ${t}`);
      }
    }
    // The errors as the record has them (the specs may have changed since: see Spec above).
    if (rec.phase === 'Invalid' && rec.specErrors?.length && !load.protectedNames.has(name)) {
      out.push('Spec errors:    (recorded when the spec was last seen invalid)');
      for (const e of rec.specErrors) out.push(`                ${formatIssue(e)}`);
    }
    kv('Exit code', rec.exitCode);
    if (rec.releaseRequested?.run === rec.run) kv('Released', `${rec.releaseRequested.at} with exit code ${rec.releaseRequested.exitCode}`);
    // a run reached into by hand or by a harness: never to be taken for a clean one
    const touched = await touchedOf(rec, ctx.resultsRoot);
    kv(
      'Touched',
      touched
        ? `YES: ${touchedText(touched)} (berth exec, berth cp or the API), ${touched.first} to ${touched.last}; see ${path.join(path.dirname(rec.resultsDir ?? ''), EXEC.record)}`
        : 'no (no berth exec or cp; a plain docker exec cannot be seen)',
    );
    if (rec.score !== undefined || rec.scoreError !== undefined)
      kv(
        'Score',
        rec.scorePass !== undefined
          ? rec.scorePass
            ? 'pass (the score file says so)'
            : 'fail (the score file says so)'
          : (rec.score ?? `none: ${rec.scoreError ?? ''}`),
      );
    kv('Run', rec.run);
    kv('Retries used', rec.retriesUsed);
    kv('Created', rec.createdAt ? `${rec.createdAt} (${age(rec.createdAt, now)} ago)` : undefined);
    kv('Started', rec.startedAt);
    kv('Finished', rec.finishedAt);
    kv('Deadline at', rec.deadlineAt ? `${rec.deadlineAt} (${rec.deadlineSource === 'default' ? 'from --default-deadline' : 'from the spec'})` : undefined);
    kv('Disk limit', rec.disk ? diskLine(rec.disk) : undefined);
    for (const v of rec.volumeSizes ?? [])
      kv(
        `Volume ${v.name}`,
        `${showBytes(v.bytes)} at most (spec.volumes[].size; ${v.enforcedBy === 'engine' ? "enforced by the engine's local volume driver" : 'measured by berth at an interval'})`,
      );
    if (rec.image) {
      kv(
        'Image id',
        `${rec.image.id}${rec.image.pinned ? ` (pinned for set ${loaded?.set?.set.name ?? '?'}; made from the id, not ${rec.image.ref})` : ` (${rec.image.ref})`}`,
      );
      kv('Repo digests', rec.image.repoDigests.length ? rec.image.repoDigests.join(', ') : 'none (built or loaded on the engine)');
      if (rec.image.platformManifest) kv('Platform manifest', `${rec.image.platformManifest} (of the index ${rec.image.id})`);
    }
    kv('Results', rec.resultsDir);
    if (rec.redaction) {
      const r = rec.redaction;
      const not = (r.notRedacted ?? []).map((x) => `${x.name} (${x.why})`).join(', ');
      kv('Redacted', `${r.secrets.length ? r.secrets.join(', ') : 'no secret'}${r.complete ? '' : `; NOT redacted: ${not}`}`);
    }
    kv('Container', rec.containerId?.slice(0, 12));
    if (rec.lastError) {
      kv(
        'Last error',
        `${rec.lastError.message} (${rec.lastError.failures} failure${rec.lastError.failures === 1 ? '' : 's'}; next try ${rec.lastError.nextRetryAt})`,
      );
    }
    for (const w of rec.warnings ?? []) out.push(`WARNING:        ${w}`);
    if (rec.lastAttestation) {
      const a = rec.lastAttestation;
      out.push('', `Attestation (${a.depth}, ${a.at}): ${a.ok ? 'OK' : 'FAILED'}`);
      out.push(table(a.checks.map((c) => [`  ${c.ok ? 'ok  ' : 'FAIL'}`, c.name, c.detail])).trimEnd());
    }
    const grades = runGrades(rec);
    if (grades.length) {
      // spec.grade: the grades of the current run, oldest first; the last one is the verdict
      out.push('', `Grades (run ${rec.run}; the latest decides):`);
      out.push(
        table([
          ['  K', 'STATE', 'VERDICT', 'REASON', 'GRADER IMAGE', 'WHEN'],
          ...grades.map((g) => [
            `  ${g.k}`,
            g.state,
            gradeVerdict(g),
            g.reason ?? (g.exitCode !== undefined ? `exit ${g.exitCode}` : '-'),
            graderImage(g),
            gradeWhen(g),
          ]),
        ]).trimEnd(),
      );
      const last = grades.at(-1) as GradeRecord;
      if (last.message) out.push(`  Message:      ${last.message}`);
      if (last.scoreError) out.push(`  Score:        none: ${last.scoreError}`);
      for (const n of last.notes ?? []) out.push(`  Note:         ${n}`);
      out.push(`  Folder:       ${path.dirname(last.resultsDir)}`);
    }
    if (rec.history.length) {
      out.push('', 'History:');
      out.push(
        table([
          ['  RUN', 'PHASE', 'REASON', 'EXIT', 'STARTED', 'FINISHED', 'TOUCHED'],
          ...rec.history.map((h) => [
            `  ${h.run}`,
            h.phase,
            h.reason ?? '-',
            h.exitCode === undefined ? '-' : String(h.exitCode),
            h.startedAt ?? '-',
            h.finishedAt ?? '-',
            h.touched ? touchedText(h.touched) : '-',
          ]),
        ]).trimEnd(),
      );
    }
  } else if (damaged) {
    kv('Phase', 'unknown: the status record is damaged');
    kv('Record', `${damaged.keptAt ?? damaged.file}: ${damaged.problem}`);
    out.push('                (reconcile sets it aside and rebuilds the status from the engine)');
  } else {
    kv('Phase', 'not reconciled yet');
  }
  const engine = ctx.engine();
  const filters = [...instanceFilters(ctx.instance), `${LABELS.attempt}=${name}`];
  try {
    const [cs, ns, vs, images, records] = await Promise.all([
      engine.containers.list(filters),
      engine.networks.list(filters),
      engine.volumes.list(filters),
      engine.images.list([]),
      ctx.store().loadAll(),
    ]);
    const labeled = images.filter((i) => i.labels[LABELS.managed] !== undefined);
    const own = { instance: ctx.instance, labeledImages: imageLabels(labeled), recorded: recordedContainers(records.values()) };
    // a set's pinned image whose tag names another id now: reported, not followed
    const policy = loaded?.set?.set;
    const moved = policy ? tagMoves(ctx.store().pins.reload(), [policy], imageIndex(images)).filter((m) => m.ref === loaded?.spec.image) : [];
    for (const m of moved) out.push(`WARNING:        ${tagMoveText(m)}`);
    out.push('', 'Resources:');
    const rows = [
      ...cs.flatMap((c) => {
        const o = containerOwnership(c, own);
        const p = c.placement; // a run on a swarm: its service, task and node (--backend swarm)
        return [
          [`  container`, c.name, c.state, o.owned ? `run ${c.labels[LABELS.run] ?? '?'}` : `not berth's: ${o.why}`, c.networks.join(',')],
          ...(p
            ? [[`    service`, p.service, p.taskState ? `task ${p.task ?? '?'} ${p.taskState}` : 'no task yet', `node ${p.nodeName || '?'} (${p.node})`, '']]
            : []),
        ];
      }),
      ...ns.map((n) => [`  network`, n.name, n.internal ? 'internal' : 'routed', '', '']),
      ...vs.map((v) => [`  volume`, v.name, '', '', '']),
    ];
    out.push(rows.length ? table(rows).trimEnd() : '  (none on the engine)');
  } catch (err) {
    if (!isEngineDown(err)) throw err;
    // What the records say is shown; the engine's part is not known.
    out.push('', 'Resources:      unknown (the engine did not answer)');
    out.push(...eventsSection(rec));
    ctx.io.out(out.join('\n') + '\n');
    ctx.io.err(`berth: ${describeEngineError(err)}\n`);
    return EXIT.failed;
  }
  out.push(...eventsSection(rec));
  ctx.io.out(out.join('\n') + '\n');
  return EXIT.ok;
}

/** Events shown at most (the newest; `berth events NAME` has them all). */
const DESCRIBE_EVENTS = 20;

/** kubectl describe's last section: the attempt's events (cli/events.ts), oldest first, the newest DESCRIBE_EVENTS. */
function eventsSection(rec: AttemptStatus | undefined): string[] {
  const all = rec ? eventsOf(rec) : [];
  if (!all.length) return ['', 'Events:         <none>'];
  const now = Date.now();
  const shown = all.slice(-DESCRIBE_EVENTS);
  const rows = shown.map((e) => [`  ${e.type}`, e.reason, age(e.at, now), e.message]);
  return [
    '',
    `Events:${all.length > shown.length ? ` (the newest ${shown.length} of ${all.length}: berth events ${rec?.name ?? ''})` : ''}`,
    table([['  TYPE', 'REASON', 'AGE', 'MESSAGE'], ...rows]).trimEnd(),
  ];
}

/** `2 GiB (from resources.disk; measured by berth at an interval: ...)`: where the limit comes from and which way it is enforced. */
export function diskLine(d: DiskLimit): string {
  const from = d.source === 'default' ? 'from --default-disk' : 'from resources.disk';
  const how =
    d.enforcedBy === 'engine'
      ? 'enforced by the engine for the writable layer (StorageOpt size); results and volumes measured by berth at an interval'
      : 'measured by berth at an interval: writable layer, results and volumes together';
  return `${showBytes(d.bytes)} (${from}; ${how})`;
}

/** One build's line: its context and Dockerfile, its hash, how its last build ended (the record in `<state>/builds/`) and with which builder. */
function buildText(stateDir: string, b: NormalizedBuild): string {
  const rec = readBuildRecord(stateDir, b.hash);
  const how = !rec
    ? 'not built by berth yet'
    : rec.state === 'built'
      ? `built ${rec.at} by the engine's ${rec.builder} builder${rec.ms !== undefined ? ` in ${Math.round(rec.ms / 100) / 10} s` : ''}`
      : `failed ${rec.at} (${rec.builder} builder)`;
  return `${buildTag(b.hash)} from ${b.context} (${b.dockerfile}), build hash ${b.hash.slice(0, 16)}: ${how}; log ${buildLogPath(stateDir, b.hash)}`;
}
