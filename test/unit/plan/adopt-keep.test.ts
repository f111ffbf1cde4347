/**
 * What an adoption keeps of the record is the planner's to say (ops.ts adoptKeep, on the `adopt`
 * operation): the image the record names for this very container; for a run adopted again, its
 * deadline and disk limits as it started. The executor writes what it is given. No engine.
 */
import { expect } from 'chai';
import { adoptKeep } from '../../../src/plan/ops';
import { status } from '../../support/builders';

describe('planner: what an adoption keeps', function () {
  const image = { ref: 'img', id: 'sha256:1', repoDigests: [] };
  const started = {
    run: 2,
    specHash: 'h',
    containerId: 'c1',
    image,
    startedAt: '2026-01-01T00:00:00.000Z',
    deadlineAt: '2026-01-01T00:01:00.000Z',
    deadlineSource: 'default' as const,
    disk: { bytes: 1024, source: 'default' as const, enforcedBy: 'measured' as const },
  };

  it('a run adopted again keeps its image, deadline and disk limit', function () {
    expect(adoptKeep(status('a', started), 2, 'h', 'c1')).to.deep.equal({
      image,
      deadline: { deadlineAt: started.deadlineAt, deadlineSource: 'default' },
      disk: { disk: started.disk },
    });
  });

  it('another container of the run keeps the deadline, not the image', function () {
    expect(adoptKeep(status('a', started), 2, 'h', 'c2')).to.not.have.property('image');
    expect(adoptKeep(status('a', started), 2, 'h', 'c2')).to.have.property('deadline');
  });

  it('another run or spec hash, or a run never begun, keeps nothing of them', function () {
    expect(adoptKeep(status('a', started), 3, 'h', 'c1')).to.deep.equal({});
    expect(adoptKeep(status('a', started), 2, 'h2', 'c1')).to.deep.equal({ image });
    expect(adoptKeep(status('a', { ...started, startedAt: undefined }), 2, 'h', 'c1')).to.deep.equal({ image });
    expect(adoptKeep(undefined, 1, 'h', 'c1')).to.deep.equal({});
  });
});
