/**
 * Checks the property berth's engine-side instance lock (src/status/engine-lock.ts) rests on, on
 * the engine at hand: a volume create whose name exists returns the existing volume, so among
 * concurrent creates of one name with different labels every caller reads back the same, stored
 * labels. Races `--concurrency` creates (default 20) for `--rounds` names (default 30), each
 * straight through the Engine API (POST /volumes/create, one socket each), then removes them.
 * Exit 0 when every round had one winner that every contender saw; 1 otherwise.
 *
 *   npx tsx scripts/lock-race.ts [--rounds N] [--concurrency N]
 */
import Dockerode from 'dockerode';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const rounds = arg('--rounds', 30);
const concurrency = arg('--concurrency', 20);
const docker = new Dockerode(process.env.DOCKER_HOST ? undefined : { socketPath: '/var/run/docker.sock' });

/** POST /volumes/create and the engine's answer (dockerode's createVolume drops the body). */
function create(name: string, token: string): Promise<{ Labels: Record<string, string> | null }> {
  const opts = {
    path: '/volumes/create?',
    method: 'POST',
    allowEmpty: true,
    options: { Name: name, Driver: 'local', Labels: { 'dev.berth.lock-race': 'true', token } },
    statusCodes: { 200: true, 201: true, 500: 'server error' },
  };
  return new Promise((resolve, reject) => docker.modem.dial(opts, (err: unknown, data: unknown) => (err ? reject(err) : resolve(data as never))));
}

async function main(): Promise<number> {
  let bad = 0;
  for (let r = 0; r < rounds; r++) {
    const name = `berth-lock-race-${process.pid}-${r}`;
    try {
      const seen = await Promise.all(Array.from({ length: concurrency }, (_, i) => create(name, `t${i}`).then((v) => v.Labels?.token ?? '(none)')));
      const stored = ((await docker.getVolume(name).inspect()) as { Labels: Record<string, string> }).Labels.token;
      const distinct = [...new Set(seen)];
      if (distinct.length !== 1 || distinct[0] !== stored) {
        bad++;
        console.log(`round ${r}: contenders saw ${distinct.join(', ')}; stored ${stored}`);
      }
    } finally {
      await docker
        .getVolume(name)
        .remove()
        .catch(() => undefined);
    }
  }
  const v = await docker.version();
  console.log(`engine ${v.Version}: ${rounds} rounds of ${concurrency} concurrent creates, ${bad} with more than one winner`);
  return bad ? 1 : 0;
}

main().then((code) => (process.exitCode = code));
