/** `berth logs NAME [-f]`: from the container while it exists, from the harvested log after. */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { containerName, EXIT } from '../../constants';
import { isNotFound } from '../../engine/errors';
import type { Context } from '../context';

export async function runLogs(ctx: Context, name: string, o: { follow?: boolean }): Promise<number> {
  const rec = await ctx.store().get(name);
  const engine = ctx.engine();
  const id = rec?.containerId ?? containerName(ctx.instance, name);
  try {
    const stream = await engine.containers.logs(id, { follow: !!o.follow });
    for await (const chunk of stream) ctx.io.out(Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk));
    return EXIT.ok;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  if (rec?.resultsDir) {
    try {
      ctx.io.out(await fs.readFile(path.join(path.dirname(rec.resultsDir), 'logs.txt'), 'utf8'));
      return EXIT.ok;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  ctx.io.err(`berth: no logs for ${JSON.stringify(name)}: no container and no harvested log\n`);
  return EXIT.failed;
}
