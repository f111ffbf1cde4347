/** This host's processes, read from /proc (zombies left out), and the trees under some of them. */
import { promises as fs } from 'node:fs';

export interface Proc {
  pid: number;
  ppid: number;
  args: string;
}

export async function processTable(): Promise<Proc[]> {
  const procs: Proc[] = [];
  for (const e of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const stat = await fs.readFile(`/proc/${e}/stat`, 'utf8').catch(() => '');
    const args = (await fs.readFile(`/proc/${e}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ');
    const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (stat && after[0] !== 'Z') procs.push({ pid: Number(e), ppid: Number(after[1]), args });
  }
  return procs;
}

/** The processes `root` accepts and every process under them. */
export async function processTrees(root: (p: Proc) => boolean): Promise<number[]> {
  const procs = await processTable();
  const out = procs.filter(root).map((p) => p.pid);
  for (let i = 0; i < out.length; i++) for (const p of procs) if (p.ppid === out[i] && !out.includes(p.pid)) out.push(p.pid);
  return out;
}

/** Whether `pid` is gone or a zombie (nothing reaps an orphaned containerd here), or still alive. */
async function procState(pid: number): Promise<'gone' | 'alive'> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return !stat || state === 'Z' ? 'gone' : 'alive';
}

/**
 * Whether `pid` is gone (or a zombie) within `ms`. No event tells a foreign process's end: its
 * /proc entry is looked at every 50 ms.
 */
export async function ended(pid: number, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 50))) {
    if ((await procState(pid)) === 'gone') return true;
    if (Date.now() >= end) return false;
  }
}

/**
 * Before a test engine starts again after its dockerd was killed: the containerd that dockerd
 * managed (its pid in `pidFile`) dies with it, but may still be on its way out, or a zombie that
 * nothing reaps, and the next dockerd waits for it for 30 s and gives up ("timeout waiting for
 * containerd to start"). One still alive whose command line names `marker` (its config under
 * this engine's exec root: a process the test's engine started) is given 5 s to end, then
 * SIGKILL by its pid and 5 s more; then the pid file goes, so the next start launches a fresh containerd
 * (which takes up the containers' shims, as after any crash).
 */
export async function releaseContainerd(pidFile: string, marker: string): Promise<void> {
  const pid = Number((await fs.readFile(pidFile, 'utf8').catch(() => '')).trim());
  if (!pid) return;
  const gone = (ms: number) => ended(pid, ms);
  if ((await procState(pid)) === 'alive') {
    const args = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ');
    if (!args.includes(marker)) return; // the pid was taken by another process: not ours to end
    if (!(await gone(5000))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ended meanwhile
      }
      if (!(await gone(5000))) return;
    }
  }
  await fs.rm(pidFile, { force: true });
}
