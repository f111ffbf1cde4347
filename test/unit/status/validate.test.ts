/** A status record read back: the fields pass rates are judged on (score, scorePass) must be what they say, or the record is damaged. */
import { expect } from 'chai';
import { recordProblem } from '../../../src/status/validate';
import { status } from '../../support/builders';

describe('status/validate', () => {
  const ok = { ...status('a', { phase: 'Succeeded' }), instance: 'i' };

  it('takes a record with a score and its verdict', () => {
    expect(recordProblem({ ...ok, score: 1, scorePass: true }, 'a', 'i')).to.equal(undefined);
    expect(recordProblem({ ...ok, score: 0.25 }, 'a', 'i')).to.equal(undefined);
  });

  it('refuses a score that is no finite number and a verdict that is not true or false', () => {
    expect(recordProblem({ ...ok, score: '1' }, 'a', 'i')).to.equal('field score is not a number');
    expect(recordProblem({ ...ok, score: null }, 'a', 'i')).to.equal('field score is not a number');
    expect(recordProblem({ ...ok, scorePass: 1 }, 'a', 'i')).to.equal('field scorePass is not true or false');
  });
});
