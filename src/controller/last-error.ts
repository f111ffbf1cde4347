/**
 * A failed action's trace in the attempt's record (`lastError`: when, why, how many failures in a
 * row, when it is tried next), cleared by the next action that succeeds. Besides the executor,
 * the controller writes only this. A record that cannot be written is left as it is: the trace is
 * for `describe`, the retry does not depend on it.
 */
import type { StatusStore } from '../status/store';

export async function noteFailure(store: StatusStore, name: string, at: number, e: { message: string; failures: number; nextMs: number }): Promise<void> {
  const rec = await store.get(name);
  if (!rec) return;
  const lastError = { at: new Date(at).toISOString(), message: e.message, failures: e.failures, nextRetryAt: new Date(at + e.nextMs).toISOString() };
  await store.put({ ...rec, lastError }).catch(() => undefined);
}

export async function clearFailure(store: StatusStore, name: string): Promise<void> {
  const rec = await store.get(name);
  if (!rec?.lastError) return;
  const { lastError: _e, ...rest } = rec;
  await store.put(rest).catch(() => undefined);
}
