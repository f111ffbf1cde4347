/** ImageClient over dockerode. */
import type Dockerode from 'dockerode';
import type { Readable } from 'node:stream';
import { boundedText, classifyPull, describeEngineError, EngineUnreachableError, ImagePullError, isNotFound, statusOf } from '../errors';
import type { ImageClient, ImageSummary, PullOptions } from '../types';
import { withProgress, type BoundedCalls } from './deadline';
import { labelFilter } from './filters';
import { JsonLines, LayerTally } from './pull-stream';

export class DockerImages implements ImageClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async list(labelFilters: string[]): Promise<ImageSummary[]> {
    // all: an image whose tag was rebuilt FROM it is an untagged parent, which the engine lists
    // only so; a set pinned to it holds it all the same (it is there, by id)
    const items = await this.calls.run('images.list', () => this.docker.listImages({ all: true, filters: labelFilter(labelFilters) }));
    return items.map((i) => {
      const tags = realTags(i.RepoTags);
      return { id: i.Id, tags, labels: i.Labels ?? {}, repoDigests: repoDigestsOf(i.RepoDigests, tags), size: i.Size };
    });
  }

  async inspect(ref: string): Promise<ImageSummary & { user: string; workingDir: string }> {
    const i = await this.calls.run('images.inspect', () => this.docker.getImage(ref).inspect());
    return {
      id: i.Id,
      tags: realTags(i.RepoTags),
      labels: i.Config?.Labels ?? {},
      repoDigests: realTags(i.RepoDigests),
      ...(typeof i.Size === 'number' ? { size: i.Size } : {}),
      user: i.Config?.User ?? '',
      workingDir: i.Config?.WorkingDir ?? '',
    };
  }

  /** GET /images/{ref}/get: the engine must answer within the budget; the stream then lasts as its reader wants. */
  async save(ref: string): Promise<Readable> {
    return (await this.calls.run('images.save', () => this.docker.getImage(ref).get() as Promise<Readable>, { stream: true })) as Readable;
  }

  /** POST /images/load: the budget runs from the last chunk the engine read (an image of gigabytes is never cut off while it flows). */
  async load(tar: Readable): Promise<void> {
    await this.calls.run(
      'images.load',
      async (progress) => {
        const body = withProgress(tar, progress);
        const res = (await this.docker.loadImage(body as never)) as unknown as Readable;
        // the engine's answer is a JSON stream: read to its end, an error in it is a failure
        const lines = new JsonLines();
        for await (const chunk of res) {
          progress();
          for (const m of lines.push(chunk as Buffer))
            if (m.error || m.errorDetail) throw new Error(`image load failed: ${boundedText(m.errorDetail?.message ?? m.error ?? '')}`);
        }
      },
      { idle: true },
    );
  }

  /**
   * POST /images/create with X-Registry-Auth. Two error channels: a status before the stream (the
   * call rejects), and an `errorDetail` inside the stream after a 200, looked for in every
   * message. The engine must answer within `idleMs`, then say something at least that often (a
   * registry that answers nothing makes it say nothing): past that the request is closed, which
   * cancels the pull, and it fails as `unreachable`.
   */
  async pull(ref: string, o: PullOptions = {}): Promise<{ id: string; digest?: string }> {
    const idleMs = o.idleMs ?? this.calls.timeoutMs;
    const auth = { ...(o.auth ? { authconfig: o.auth } : {}), ...(o.platform ? { platform: o.platform } : {}) };
    let stream: Readable;
    try {
      stream = (await this.calls.run('images.pull', () => this.docker.pull(ref, auth) as Promise<Readable>, {
        ms: idleMs,
        stream: true,
        ...(o.signal ? { signal: o.signal } : {}),
      })) as Readable;
    } catch (err) {
      throw pullFailure(ref, err, idleMs);
    }
    const tally = new LayerTally();
    await new Promise<void>((resolve, reject) => {
      const lines = new JsonLines();
      let timer: NodeJS.Timeout | undefined;
      let done = false;
      const finish = (err?: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', onAbort);
        if (err) {
          stream.destroy();
          reject(err);
        } else resolve();
      };
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => finish(silent(ref, idleMs)), idleMs);
      };
      const onAbort = () => finish(o.signal?.reason instanceof Error ? o.signal.reason : new Error(`pull of ${ref} aborted`));
      o.signal?.addEventListener('abort', onAbort, { once: true });
      const take = (msgs: ReturnType<JsonLines['push']>) => {
        for (const m of msgs) tally.take(ref, m);
        if (msgs.length) o.onProgress?.(tally.progress());
      };
      arm();
      stream.on('data', (chunk: Buffer) => {
        arm();
        try {
          take(lines.push(chunk));
        } catch (err) {
          finish(err as Error);
        }
      });
      stream.on('end', () => {
        try {
          take(lines.end());
          finish();
        } catch (err) {
          finish(err as Error);
        }
      });
      stream.on('error', (err) => finish(pullFailure(ref, err, idleMs)));
      stream.on('close', () => finish(new ImagePullError('unreachable', ref, 'the engine closed the pull before it ended', true)));
    });
    const i = await this.inspect(ref);
    // no layer's size in the stream (the containerd store, layers fetched within a progress tick):
    // the last word is the image's own size, so a pull never reports 0 bytes of 0
    if (tally.unsized > 0 && tally.progress().total === 0 && i.size) o.onProgress?.({ done: i.size, total: i.size });
    return { id: i.id, ...(tally.digest ? { digest: tally.digest } : {}) };
  }

  /** DELETE /images/{ref} without force (untagged parents pruned): false when already gone. */
  async remove(ref: string): Promise<boolean> {
    try {
      await this.calls.run('images.remove', () => this.docker.getImage(ref).remove({ force: false, noprune: false }));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

/** A registry that said nothing for `ms`: the engine's wait for it is given up. */
function silent(ref: string, ms: number): ImagePullError {
  return new ImagePullError('unreachable', ref, `no answer for ${Math.round(ms / 100) / 10} s (--engine-timeout): the registry does not answer`, false);
}

/** The engine's error status (or its deadline) as an ImagePullError. */
function pullFailure(ref: string, err: unknown, idleMs: number): Error {
  if (err instanceof ImagePullError) return err;
  if (err instanceof EngineUnreachableError) return err.kind === 'timeout' ? silent(ref, idleMs) : err;
  const status = statusOf(err);
  if (status === undefined) return err instanceof Error ? err : new Error(String(err));
  const text = boundedText(
    describeEngineError(err)
      .replace(/ \(HTTP \d+\)$/, '')
      .replace(/^\(HTTP code \d+\) [a-z ]+ - /, ''),
  );
  return new ImagePullError(classifyPull(status, text), ref, text, false);
}

/** The engine lists an untagged image's tags (digests) as `<none>:<none>` (`<none>@<none>`) on older versions. */
function realTags(xs: string[] | null | undefined): string[] {
  return (xs ?? []).filter((t) => !t.startsWith('<none>'));
}

/**
 * An image list's RepoDigests as `name@sha256:…`. Docker 28's containerd image store lists an
 * image pulled from a registry on an address with a port (`10.0.0.1:5000/x:1`) with a bare
 * `sha256:…` there (its inspect gives `10.0.0.1:5000/x@sha256:…`): such a digest is the one each
 * of its tags' repositories was pulled at.
 */
export function repoDigestsOf(digests: string[] | null | undefined, tags: string[]): string[] {
  const out = new Set<string>();
  for (const d of realTags(digests)) {
    if (d.includes('@')) out.add(d);
    else if (/^sha256:[0-9a-f]{64}$/.test(d)) for (const t of tags) out.add(`${repositoryOf(t)}@${d}`);
  }
  return [...out];
}

/** A tag's repository: `host:5000/x:1` → `host:5000/x` (a colon after the last slash ends it). */
function repositoryOf(tag: string): string {
  const colon = tag.lastIndexOf(':');
  return colon > tag.lastIndexOf('/') ? tag.slice(0, colon) : tag;
}
