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

/** winston's default (npm) levels: a message is written when its level's number is at most the logger's. */
const LEVELS: Readonly<Record<string, number>> = { error: 0, warn: 1, info: 2, http: 3, verbose: 4, debug: 5, silly: 6 };

/**
 * A logger that is made, and winston loaded, on its first use that writes something (or asks
 * anything of it): a message below the level, and a child logger, load nothing until then. A
 * `reconcile --once` that changes nothing writes no line, so it never loads winston.
 */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? 'info';
  return lazyLogger(
    () => makeLogger(opts),
    () => level,
  );
}

/** `make` is called once, when the logger is first really used; `level()` is its level until then. */
function lazyLogger(make: () => Logger, level: () => string): Logger {
  let real: Logger | undefined;
  const target = (): Logger => (real ??= make());
  const levelNow = (): string => (real ? real.level : level());
  const below = (prop: string | symbol): boolean =>
    typeof prop === 'string' && Object.hasOwn(LEVELS, prop) && (LEVELS[prop] as number) > (LEVELS[levelNow()] ?? Infinity);
  const proxy: Logger = new Proxy({} as Logger, {
    get(_t, prop) {
      if (!real) {
        // A child of a logger not made yet is made with it, on its own first use.
        if (prop === 'child') return (meta: object) => lazyLogger(() => target().child(meta), levelNow);
        // As winston does for a level it does not write: nothing, and the logger back.
        if (below(prop)) return () => proxy;
      }
      const r = target();
      const v = Reflect.get(r, prop, r) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(r) : v;
    },
    set: (_t, prop, value) => Reflect.set(target(), prop, value),
    has: (_t, prop) => Reflect.has(target(), prop),
  });
  return proxy;
}

/** Fields the text format does not print (the JSON format does). */
const TEXT_HIDDEN: ReadonlySet<string> = new Set(['reconcileId', 'calls']);

function makeLogger(opts: LoggerOptions): Logger {
  const { format: f, createLogger: make, transports } = winston();
  const format =
    opts.format === 'json'
      ? f.combine(f.timestamp(), f.json())
      : f.combine(
          f.timestamp({ format: 'HH:mm:ss.SSS' }),
          f.printf((info) => {
            const { level, message, timestamp, ...rest } = info as Record<string, unknown>;
            // a batch's id and engine call counts are for machines (--log-format json keeps them), not for a person reading the line
            const extra = Object.entries(rest)
              .filter(([k]) => typeof k === 'string' && !TEXT_HIDDEN.has(k))
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
