/**
 * The engine's pull progress stream (moby's JSONMessage, one JSON object a line), read message by
 * message: every `errorDetail` is a failure even after the engine's 200 (dockerode's
 * followProgress reports such a stream as a success), the bytes done and total summed per layer,
 * the digest the registry gave. Pure but for the stream it reads.
 */
import { boundedText, classifyPull, ImagePullError, type PullErrorKind } from '../errors';
import type { PullProgress } from '../types';

export interface PullMessage {
  status?: string;
  id?: string;
  progressDetail?: { current?: number; total?: number };
  errorDetail?: { code?: number; message?: string };
  error?: string;
}

/** Layers' bytes as the stream tells them: per layer id, what is done and its size once known. */
export class LayerTally {
  private readonly layers = new Map<string, { done: number; total: number }>();
  digest: string | undefined;
  /**
   * Layers fetched whose size the stream never gave: the containerd image store (Docker 28 with
   * containerd-snapshotter) goes from `Pulling fs layer` to `Download complete` with no
   * `Downloading` message when a layer arrives before its first progress report (seen with a
   * local registry: 64 KiB and 4 MiB layers alike).
   */
  private readonly unsizedIds = new Set<string>();

  /** Takes one message; throws the ImagePullError an `errorDetail` (or `error`) carries. */
  take(ref: string, m: PullMessage): void {
    if (m.errorDetail || m.error) {
      const text = boundedText(m.errorDetail?.message ?? m.error ?? 'the engine reported an error');
      const code = typeof m.errorDetail?.code === 'number' ? m.errorDetail.code : undefined;
      const kind: PullErrorKind = classifyPull(code, text);
      throw new ImagePullError(kind, ref, text, true);
    }
    const status = m.status ?? '';
    const digest = /^Digest: (sha256:[0-9a-f]{64})$/.exec(status);
    if (digest) {
      this.digest = digest[1];
      return;
    }
    if (!m.id || m.id === ref) return;
    const l = this.layers.get(m.id) ?? { done: 0, total: 0 };
    if (status === 'Downloading') {
      const total = m.progressDetail?.total ?? 0;
      if (total > 0) l.total = total;
      l.done = Math.max(l.done, Math.min(m.progressDetail?.current ?? 0, l.total || Infinity));
    } else if (status === 'Download complete' || status === 'Pull complete' || status === 'Verifying Checksum') {
      if (l.total === 0) this.unsizedIds.add(m.id);
      l.done = l.total;
    } else if (status === 'Already exists') {
      l.done = l.total;
    }
    this.layers.set(m.id, l);
  }

  /** How many layers were fetched with no size given (see unsizedIds). */
  get unsized(): number {
    return this.unsizedIds.size;
  }

  progress(): PullProgress {
    let done = 0;
    let total = 0;
    for (const l of this.layers.values()) {
      done += l.done;
      total += l.total;
    }
    return { done, total };
  }
}

/** Splits a byte stream into its JSON lines (a line cut across chunks is joined; a line that is not JSON is skipped). */
export class JsonLines {
  private rest = '';

  push(chunk: Buffer | string): PullMessage[] {
    const text = this.rest + String(chunk);
    const lines = text.split(/\r?\n/);
    this.rest = lines.pop() ?? '';
    return lines.flatMap((l) => parse(l));
  }

  end(): PullMessage[] {
    const last = parse(this.rest);
    this.rest = '';
    return last;
  }
}

function parse(line: string): PullMessage[] {
  const t = line.trim();
  if (!t) return [];
  try {
    const v = JSON.parse(t) as unknown;
    return typeof v === 'object' && v !== null ? [v as PullMessage] : [];
  } catch {
    return [];
  }
}
