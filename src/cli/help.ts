/** The examples and notes `--help` shows after each command's options (kubectl-style). */

export const EXIT_CODES_HELP = `
Exit codes:
  0  done
  1  an operation failed (engine unreachable, a create refused, --timeout passed, ...)
  2  usage error or invalid spec
  3  with --wait (and berth wait): at least one task failed (a non-zero exit, TimedOut, OOMKilled, ...);
     berth compare --fail-on regression: a pass rate fell with p < --alpha
  4  berth plan --detailed-exitcode: changes are pending
  5  with --wait (and berth wait): at least one infrastructure outcome (Blocked, Invalid, Lost,
     a missing score, ...); wins over 3. --fail-on infra: only 5; --fail-on none: neither
`;

export const ENV_HELP = `
Environment and berth.yaml:
  BERTH_<FLAG>  every flag's default, named after it: BERTH_SPECS for --specs, BERTH_DEFAULT_DEADLINE
                for --default-deadline, BERTH_ONCE=true for --once (a flag wins)
  berth.yaml    defaults for the common flags (specs: ..., instance: ..., contexts: {ci: {...}}), in
                the working directory, beside the specs folder, or --config FILE; the environment
                wins over it (docs/CONFIG.md)
  DOCKER_HOST  the engine, as the Docker CLI finds it (else the local socket)
`;

const EXAMPLES: Record<string, string[]> = {
  berth: ['berth validate', 'berth plan', 'berth reconcile --once --wait --timeout 30m', 'berth get -l suite=demo', 'berth logs swe-task-42-try-1 --tail 50'],
  validate: ['berth validate', 'berth validate specs/suite.yaml -o json', 'berth validate --git https://example.com/evals.git --git-path specs'],
  plan: [
    'berth plan',
    'berth plan --detailed-exitcode   # exit 4 when changes are pending',
    'berth plan -o json',
    'berth plan --git https://example.com/evals.git --git-ref main',
  ],
  reconcile: [
    'berth reconcile --once --wait --timeout 30m   # run every attempt to completion',
    'berth reconcile --once --wait --fail-on infra   # an eval run: task failures exit 0, infrastructure outcomes 5',
    'berth reconcile --metrics-addr 127.0.0.1:9464   # run as a controller',
    'berth reconcile --git https://example.com/evals.git --git-path specs --git-interval 60s   # follow a repository',
  ],
  source: ['berth source', 'berth source -o json'],
  get: [
    'berth get',
    'berth get -l "suite=demo,model in (m1,m2)" -o wide',
    'berth get a b -o yaml',
    'berth get -l "!model" -o name --no-headers',
    'berth get --sets',
  ],
  events: ['berth events', 'berth events swe-task-42-try-1 -w', 'berth events -l suite=demo -o json'],
  wait: ['berth wait -l suite=demo --timeout 30m', 'berth wait a --for phase=Running --timeout 2m'],
  rerun: [
    'berth rerun swe-task-42-try-1',
    'berth rerun set/swe-lite   # every attempt of the AttemptSet',
    'berth get -o name -l suite=demo | xargs berth rerun',
  ],
  regrade: [
    'berth regrade swe-lite-m1-t1-0',
    'berth regrade -l berth.dev/set=swe-lite',
    'berth regrade --all --max-running 4   # every graded attempt, 4 graders at a time, seen through',
    'berth regrade --all --no-wait   # mark them; the next reconcile (or the controller) grades them',
  ],
  delete: ['berth delete swe-task-42-try-1', 'berth delete -l "model notin (m1)"'],
  summary: ['berth summary', 'berth summary swe-lite -l model=m1', 'berth summary -o junit > summary.xml', 'berth summary -o json --samples seed'],
  compare: [
    'berth compare set/swe-lite --by model=m1,m2   # m2 against m1, paired on the other axes',
    'berth summary -o json > main.json   # on the main branch, kept as an artifact',
    'berth compare --baseline main.json -o markdown --fail-on regression >> "$GITHUB_STEP_SUMMARY"',
    'berth compare set/swe-lite --baseline main.json -o json',
  ],
  report: [
    'berth report   # writes <results root>/report.html',
    'berth report swe-lite -l model=m1 -o swe-lite.html',
    'berth report -o - > report.html',
    'berth report --baseline main.json   # the comparison with that summary first',
  ],
  describe: ['berth describe swe-task-42-try-1', 'berth describe set/swe-lite   # each attempt of the AttemptSet'],
  logs: [
    'berth logs a -f',
    'berth logs a --run 1 --tail 20',
    'berth logs a --sidecar egress-proxy',
    'berth logs set/swe-lite --tail 5   # each after a ==> attempt/NAME <== line',
  ],
  images: ['berth images', 'berth images set/swe-lite -o wide', 'berth images -o json   # each image: present, missing, pulling or in back-off, and why'],
  pull: ['berth pull --all   # every image the specs need, before the run (CI warm-up)', 'berth pull set/swe-lite', 'berth pull -l suite=demo --max-pulls 2'],
  exec: [
    'berth exec swe-task-42-try-1 -- ls -la   # recorded: the run is marked touched',
    'berth exec swe-task-42-try-1 -w /work --timeout 5m -- pytest -x',
    'berth exec -it swe-task-42-try-1 -- sh',
  ],
  cp: ['berth cp swe-task-42-try-1:/work/out.log ./out.log', 'berth cp ./patch.diff swe-task-42-try-1:/work/', 'tar -c data | berth cp - sandbox-1:/work'],
  release: ['berth release sandbox-1   # its run ends Succeeded, then harvest, export and grade', 'berth release sandbox-1 --exit-code 1'],
  clean: ['berth clean', 'berth clean --keep-state'],
  unlock: ['berth unlock', 'berth unlock --force'],
  version: ['berth version'],
  completion: [
    'source <(berth completion bash)',
    'berth completion zsh > "${fpath[1]}/_berth"',
    'berth completion fish > ~/.config/fish/completions/berth.fish',
  ],
};

export function examplesHelp(command: string): string {
  const ex = EXAMPLES[command];
  return ex ? `\nExamples:\n${ex.map((e) => `  ${e}`).join('\n')}\n` : '';
}
