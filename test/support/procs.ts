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
