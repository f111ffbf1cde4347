/** A set's pin key (spec/hash.ts templatePinKey): an edit no child's spec hash reads keeps it; any other changes it. */
import { expect } from 'chai';
import { templatePinKey } from '../../../src/spec/hash';

const T = {
  image: 'swe/env:1',
  command: ['sh', '-c', 'run ${{ matrix.task }}'],
  fixture: './tasks/${{ matrix.task }}',
  secrets: [{ name: 'k', fromFile: './secrets/k' }],
  workspace: { exclude: ['dist'] },
};

describe("spec: a set's pin key", function () {
  it("keeps its value over edits that re-run no child: workspace, harvest, grade, retries, TTL, the fixture's and a secret file's path", function () {
    const k = templatePinKey(T);
    for (const edit of [
      { workspace: { exclude: ['dist', '.pytest_cache'] } },
      { harvest: { maxFiles: 10 } },
      { grade: { command: ['true'] } },
      { retries: 2 },
      { ttlSecondsAfterFinished: 60 },
      { fixture: './elsewhere/${{ matrix.task }}' },
      { secrets: [{ name: 'k', fromFile: './other/k' }] },
    ])
      expect(templatePinKey({ ...T, ...edit }), JSON.stringify(edit)).to.equal(k);
    const { workspace: _w, ...without } = T;
    expect(templatePinKey(without)).to.equal(k);
  });

  it("changes with any field a child's spec hash reads", function () {
    const k = templatePinKey(T);
    for (const edit of [
      { image: 'swe/env:2' },
      { command: ['sh', '-c', 'run2 ${{ matrix.task }}'] },
      { env: { A: '1' } },
      { resources: { cpus: 1 } },
      { deadlineSeconds: 60 },
      { secrets: [{ name: 'k2', fromFile: './secrets/k' }] },
      { secrets: [{ name: 'k', fromEnv: 'K' }] },
    ])
      expect(templatePinKey({ ...T, ...edit }), JSON.stringify(edit)).to.not.equal(k);
  });
});
