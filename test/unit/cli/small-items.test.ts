/** Smaller items of issue 54 (fake engine): plan counts a Blocked attempt once, describe's Events, get's mark of a deleted attempt, "report of 1 attempt". */
import { expect } from 'chai';
import { FakeSandbox } from '../../support/fake-sandbox';

describe('cli: what a newcomer read wrong (issue 54; fake engine)', function () {
  let sb: FakeSandbox;
  beforeEach(async function () {
    sb = await FakeSandbox.create('small');
    sb.fake.runTasks(() => ({ code: 0 }));
  });
  afterEach(async function () {
    await sb.dispose();
  });

  it("plan counts a Blocked attempt once; describe ends with Events; get marks a deleted attempt; the report's line counts in the singular", async function () {
    await sb.write('a.yaml', sb.attempt('a', 'true'));
    await sb.write('b.yaml', sb.attempt('b', 'true').replace('berth/busybox:local', 'nothere/none:1') + '  imagePullPolicy: Never\n');
    const r = await sb.cli('reconcile', '--once', '--wait', '--fail-on', 'none');
    expect(r.code, r.stderr).to.equal(0);
    expect((await sb.status('b'))?.phase).to.equal('Blocked');
    const planned = await sb.cli('plan');
    const json = JSON.parse((await sb.cli('plan', '-o', 'json')).stdout) as { actions: unknown[]; unchanged: Record<string, unknown> };
    // two attempts, each counted once (the Blocked one was both unchanged and an action without operations)
    expect(json.actions.length + Object.keys(json.unchanged).length).to.equal(2);
    expect(planned.stdout).to.match(/^No changes: 2 attempts as specified\.$/m);

    const described = await sb.cli('describe', 'a');
    expect(described.stdout).to.match(/\nEvents:\n(.*\n)*.*Started/);

    await sb.remove('b.yaml');
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    const report = await sb.cli('report');
    expect(report.code, report.stderr).to.equal(0);
    expect(report.stdout + report.stderr).to.match(/report of 1 attempt \(1 passed, 0 failed, 0 infra, 0 unfinished\)/);

    expect((await sb.cli('delete', 'a')).code).to.equal(0);
    const get = await sb.cli('get', 'a');
    expect(get.stdout).to.match(/^a\s+Succeeded\s+Completed, deleted\s/m);
  });
});
