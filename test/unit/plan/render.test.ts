/** changeCount: what `plan --detailed-exitcode` and `reconcile` count as a change. */
import { expect } from 'chai';
import type { Plan } from '../../../src/plan/types';
import { changeCount } from '../../../src/plan/render';

function planOf(...types: ('attest' | 'stop')[]): Plan {
  const ops = types.map((type) =>
    type === 'attest'
      ? { type, resource: 'container:x', cause: 'due', id: 'x', desired: {} as never }
      : { type, resource: 'container:x', cause: 'c', id: 'x', graceSeconds: 1 },
  );
  return { at: 0, actions: [{ attempt: 'a', kind: 'attest', summary: 's', ops }], unchanged: new Map() } as Plan;
}

describe('plan/render changeCount', function () {
  it('a deep attestation alone is no change', function () {
    expect(changeCount(planOf('attest'))).to.equal(0);
  });
  it('every other operation counts', function () {
    expect(changeCount(planOf('attest', 'stop'))).to.equal(1);
  });
});
