/**
 * The Engine API version berth talks to one engine: asked once per engine client (GET /version,
 * unversioned, as `docker version` negotiates), then min(the engine's ApiVersion, the newest berth
 * is tested with), put in front of every path (`/v1.45/containers/json`). An unversioned request
 * would be answered at the engine's own newest version, whose fields berth may not know; a fixed
 * one would be refused by an older engine. An engine older than the oldest berth is tested with
 * is refused: every call fails with EngineTooOldError.
 */
import { ENGINE_API } from '../../constants';
import { EngineTooOldError } from '../errors';

/** `1.45` → [1, 45]; anything else → undefined. */
function parse(v: string): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)$/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** Negative when a < b, 0 when equal, positive when a > b (major, then minor). */
export function compareApi(a: string, b: string): number {
  const x = parse(a);
  const y = parse(b);
  if (!x || !y) throw new Error(`not an API version: ${x ? b : a}`);
  return x[0] - y[0] || x[1] - y[1];
}

/**
 * The API version to talk to an engine that says `engineApi` (its /version ApiVersion) and is
 * `engineVersion`; throws EngineTooOldError below ENGINE_API.oldest (and for an engine that
 * names no version it can be compared by).
 */
export function negotiateApi(engineApi: string | undefined, engineVersion: string | undefined, address: string): string {
  const api = engineApi ?? '';
  if (!parse(api) || compareApi(api, ENGINE_API.oldest) < 0) throw new EngineTooOldError(address, engineVersion ?? '', api);
  return compareApi(api, ENGINE_API.newest) > 0 ? ENGINE_API.newest : (parse(api) ?? [0, 0]).join('.');
}
