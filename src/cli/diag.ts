/**
 * A command's diagnostics on stderr (`berth: <message>` lines, progress lines), shaped by
 * `--log-format`: with `json` each is one JSON object per line, as the logger's are, so every
 * line on stderr parses; with `text` it is the plain line.
 */
import type { Context } from './context';
import { liveLine } from './live-line';

export { plural } from '../util/plural';

export type DiagLevel = 'error' | 'warn' | 'info';

export function diag(ctx: Pick<Context, 'io' | 'logFormat'>, level: DiagLevel, message: string, fields: Record<string, unknown> = {}): void {
  const line =
    ctx.logFormat === 'json'
      ? JSON.stringify({ level, message, ...fields, timestamp: new Date().toISOString() })
      : `berth: ${level === 'warn' ? 'warning: ' : ''}${message}`;
  liveLine(ctx.io).above(`${line}\n`);
}
