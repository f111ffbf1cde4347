/**
 * berth-egress-proxy: the entry point, and the only place that exits. Reads the environment,
 * exits 2 on a bad configuration, listens, prints the one `listening` line berth waits for,
 * and on SIGTERM/SIGINT stops accepting, closes what is open and exits 0.
 * Bundled by scripts/build-proxy.sh into dist/proxy/berth-egress-proxy.js.
 */
import { loadConfig } from './config';
import { PROXY_ENV, PROXY_EXIT } from './contract';
import { listeningLine } from './log-lines';
import { Exchanges } from './exchange';
import { createProxyServer } from './server';
import { SourceGate } from './source-gate';

const NAME = 'berth-egress-proxy';
/** If closing hangs (it should not), exit anyway after this long. */
const SHUTDOWN_GRACE_MS = 5000;

function stdoutLine(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  if (!config.ok) {
    for (const e of config.errors) process.stderr.write(`${NAME}: ${e}\n`);
    process.exit(PROXY_EXIT.badConfig);
  }
  const { allowlist, credentials, sidecars, port, listen, connectTimeoutMs } = config.value;
  // The values live on in the parsed configuration only: nothing this process starts or prints sees them.
  delete process.env[PROXY_ENV.credentials];
  delete process.env[PROXY_ENV.sidecars];
  // One registry of exchanges for every listener: one id sequence in the log.
  const exchanges = new Exchanges(stdoutLine);
  const proxy = createProxyServer({ allowlist, credentials, connectTimeoutMs, sink: stdoutLine, exchanges });
  const sideProxies = sidecars.map((s) =>
    createProxyServer({
      allowlist: s.allowlist,
      credentials: s.credentials,
      connectTimeoutMs,
      sink: stdoutLine,
      exchanges,
      sidecar: { name: s.name, gate: new SourceGate(s.source) },
    }),
  );

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(PROXY_EXIT.ok), SHUTDOWN_GRACE_MS).unref();
    Promise.all([proxy, ...sideProxies].map((p) => p.close())).then(
      () => process.exit(PROXY_EXIT.ok),
      () => process.exit(PROXY_EXIT.ok),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  let bound = port;
  let at = port;
  try {
    bound = await proxy.listen(port, listen);
    for (const [i, s] of sidecars.entries()) {
      at = s.port;
      await sideProxies[i]?.listen(s.port, listen);
    }
  } catch (err) {
    process.stderr.write(`${NAME}: cannot listen on ${listen}:${at}: ${(err as Error).message}\n`);
    process.exit(PROXY_EXIT.listenFailed);
  }
  stdoutLine(
    listeningLine(
      bound,
      allowlist.entries.map((e) => e.text),
      credentials.map((c) => c.target.text),
      sidecars.map((s) => ({
        name: s.name,
        port: s.port,
        allow: s.allowlist.entries.map((e) => e.text),
        credentials: s.credentials.map((c) => c.target.text),
      })),
    ),
  );
}

void main();
