/**
 * Calls `onChange` whenever something in `dir` changes (a file written, renamed into it or
 * removed), using the OS's file events (fs.watch), never polling. A folder that does not exist
 * yet is waited for: its nearest existing ancestor is watched until it appears.
 */
import { existsSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';

export interface FolderWatch {
  close(): void;
}

export function watchFolder(dir: string, onChange: () => void, onError: (err: Error) => void = () => undefined): FolderWatch {
  const target = path.resolve(dir);
  let watcher: FSWatcher | undefined;
  let watching = '';
  let closed = false;
  const nearest = (): string => {
    let d = target;
    while (!existsSync(d) && path.dirname(d) !== d) d = path.dirname(d);
    return d;
  };
  const arm = (): void => {
    if (closed) return;
    const d = nearest();
    if (d === watching) return;
    watcher?.close();
    watching = d;
    try {
      watcher = watch(d, () => {
        if (watching !== target) arm();
        onChange();
      });
      watcher.on('error', (err) => {
        // the watched folder went away: watch its nearest ancestor again
        watching = '';
        watcher?.close();
        watcher = undefined;
        if (!closed) {
          onError(err);
          arm();
          onChange();
        }
      });
    } catch (err) {
      onError(err as Error);
    }
    // it may have appeared between the check and the watch
    if (d !== target && existsSync(target)) arm();
  };
  arm();
  return {
    close() {
      closed = true;
      watcher?.close();
    },
  };
}
