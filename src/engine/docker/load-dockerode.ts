/**
 * dockerode, loaded without what berth never uses up front. dockerode and docker-modem load an
 * SSH client (ssh2, for `ssh://` DOCKER_HOST) and gRPC with protobuf (for BuildKit sessions) at
 * require time: about 80 ms of every CLI command here, for code a local or TCP engine never runs.
 * Before dockerode loads, the two modules that pull them in are put in Node's module cache as
 * stand-ins that load the real module on their first call (each exports one function). So is
 * tar-fs (with tar-stream under it), which dockerode uses only to pack an image's build context
 * (its `pack` and `extract` load the real one), and docker-modem's HttpDuplex (with
 * readable-stream under it, ~14 modules), which it makes only for a hijacked connection (an
 * attach or exec). A layout these paths do not match leaves
 * dockerode to load as it always does.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
import { existsSync } from 'node:fs';
import Module from 'node:module';
import path from 'node:path';
import type DockerodeType from 'dockerode';

type Fn = (this: unknown, ...args: unknown[]) => unknown;

/** Module files that are stood in for until first use. */
export function deferredModuleFiles(): string[] {
  const dockerode = require.resolve('dockerode');
  const modem = require.resolve('docker-modem', { paths: [path.dirname(dockerode)] });
  const tarFs = require.resolve('tar-fs', { paths: [path.dirname(dockerode)] });
  return [path.join(path.dirname(modem), 'ssh.js'), path.join(path.dirname(dockerode), 'session.js'), tarFs, path.join(path.dirname(modem), 'http_duplex.js')];
}

/** The stand-ins whose module exports an object of functions (the others export one function). */
const OBJECT_EXPORTS: readonly [string, readonly string[]][] = [[`${path.sep}tar-fs${path.sep}index.js`, ['pack', 'extract']]];

function standIn(file: string): void {
  if (require.cache[file] || !existsSync(file)) return;
  const m = new Module(file, module);
  m.filename = file;
  m.loaded = true;
  let real: unknown;
  const load = (): unknown => {
    if (real === undefined) {
      if (require.cache[file] === m) delete require.cache[file];
      real = require(file) as unknown;
    }
    return real;
  };
  const names = OBJECT_EXPORTS.find(([suffix]) => file.endsWith(suffix))?.[1];
  // Called with `new` (docker-modem's HttpDuplex is a constructor): an instance of the real one.
  const deferred = (pick: () => Fn) =>
    function deferred(this: unknown, ...args: unknown[]): unknown {
      return new.target ? (Reflect.construct(pick(), args) as unknown) : pick().apply(this, args);
    };
  m.exports = names ? Object.fromEntries(names.map((n) => [n, deferred(() => (load() as Record<string, Fn>)[n] as Fn)])) : deferred(() => load() as Fn);
  require.cache[file] = m;
}

let loaded: typeof DockerodeType | undefined;

export function loadDockerode(): typeof DockerodeType {
  if (!loaded) {
    let files: string[] = [];
    try {
      files = deferredModuleFiles();
    } catch {
      // a layout we do not know: dockerode loads everything, as it always does
    }
    for (const f of files) standIn(f);
    loaded = require('dockerode') as typeof DockerodeType;
  }
  return loaded;
}
