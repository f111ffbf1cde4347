/**
 * berth's logger (winston), on stderr: `--log-format text|json`, `--log-level`. Each reconcile
 * pass logs with a child logger carrying its reconcile id. Never pass a secret value here.
 *
 * winston (with logform and its colors) takes ~35 ms to load, and many commands (`get`,
 * `describe`, `logs`, `clean`) log nothing: the CLI's logger loads it on first use.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
import type winstonType from 'winston';

export type LogFormat = 'text' | 'json';
export type Logger = winstonType.Logger;

function winston(): typeof winstonType {
  return require('winston') as typeof winstonType;
}

export interface LoggerOptions {
  level?: string;
  format?: LogFormat;
  stream?: NodeJS.WritableStream;
}

/** A logger that is made, and winston loaded, on its first use. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  let real: Logger | undefined;
  const target = (): Logger => (real ??= makeLogger(opts));
  return new Proxy({} as Logger, {
    get(_t, prop) {
      const r = target();
      const v = Reflect.get(r, prop, r) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(r) : v;
    },
    set: (_t, prop, value) => Reflect.set(target(), prop, value),
    has: (_t, prop) => Reflect.has(target(), prop),
  });
}

function makeLogger(opts: LoggerOptions): Logger {
  const { format: f, createLogger: make, transports } = winston();
  const format =
    opts.format === 'json'
      ? f.combine(f.timestamp(), f.json())
      : f.combine(
          f.timestamp({ format: 'HH:mm:ss.SSS' }),
          f.printf((info) => {
            const { level, message, timestamp, ...rest } = info as Record<string, unknown>;
            const extra = Object.entries(rest)
              .filter(([k]) => typeof k === 'string')
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ');
            return `${String(timestamp)} ${String(level).padEnd(5)} ${String(message)}${extra ? ' ' + extra : ''}`;
          }),
        );
  return make({
    level: opts.level ?? 'info',
    format,
    transports: [new transports.Stream({ stream: opts.stream ?? process.stderr })],
  });
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  const w = winston();
  return w.createLogger({ silent: true, transports: [new w.transports.Console({ silent: true })] });
}
