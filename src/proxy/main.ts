/**
 * berth-egress-proxy: the entry point, and the only place that exits. Reads the environment,
 * exits 2 on a bad configuration, listens, prints the one `listening` line berth waits for,
 * and on SIGTERM/SIGINT stops accepting, closes what is open and exits 0.
 * Bundled by scripts/build-proxy.sh into dist/proxy/berth-egress-proxy.js.
 */
import { loadConfig } from './config';
import { PROXY_ENV, PROXY_EXIT } from './contract';
import { listeningLine } from './log-lines';
import { createProxyServer } from './server';

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
  const { allowlist, credentials, port, listen, connectTimeoutMs } = config.value;
  // The values live on in `credentials` only: nothing this process starts or prints sees them.
  delete process.env[PROXY_ENV.credentials];
  const proxy = createProxyServer({ allowlist, credentials, connectTimeoutMs, sink: stdoutLine });

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(PROXY_EXIT.ok), SHUTDOWN_GRACE_MS).unref();
    proxy.close().then(
      () => process.exit(PROXY_EXIT.ok),
      () => process.exit(PROXY_EXIT.ok),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  let bound: number;
  try {
    bound = await proxy.listen(port, listen);
  } catch (err) {
    process.stderr.write(`${NAME}: cannot listen on ${listen}:${port}: ${(err as Error).message}\n`);
    process.exit(PROXY_EXIT.listenFailed);
  }
  stdoutLine(
    listeningLine(
      bound,
      allowlist.entries.map((e) => e.text),
      credentials.map((c) => c.target.text),
    ),
  );
}

void main();
