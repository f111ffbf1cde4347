/** The files under `root` whose bytes hold `needle` (for the tests that look for a secret everywhere). */
import { promises as fs } from 'node:fs';
import path from 'node:path';

export async function filesHolding(root: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && (await fs.readFile(p)).includes(needle)) hits.push(p);
    }
  };
  await walk(root);
  return hits;
}
