/**
 * berth's logger (winston), on stderr: `--log-format text|json`, `--log-level`. Each reconcile
 * pass logs with a child logger carrying its reconcile id. Never pass a secret value here.
 */
import winston from 'winston';

export type LogFormat = 'text' | 'json';
export type Logger = winston.Logger;

export function createLogger(opts: { level?: string; format?: LogFormat; stream?: NodeJS.WritableStream } = {}): Logger {
  const format =
    opts.format === 'json'
      ? winston.format.combine(winston.format.timestamp(), winston.format.json())
      : winston.format.combine(
          winston.format.timestamp({ format: 'HH:mm:ss.SSS' }),
          winston.format.printf((info) => {
            const { level, message, timestamp, ...rest } = info as Record<string, unknown>;
            const extra = Object.entries(rest)
              .filter(([k]) => typeof k === 'string')
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ');
            return `${String(timestamp)} ${String(level).padEnd(5)} ${String(message)}${extra ? ' ' + extra : ''}`;
          }),
        );
  return winston.createLogger({
    level: opts.level ?? 'info',
    format,
    transports: [new winston.transports.Stream({ stream: opts.stream ?? process.stderr })],
  });
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console({ silent: true })] });
}
