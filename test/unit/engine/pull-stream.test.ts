/** The engine's pull stream read message by message (src/engine/docker/pull-stream.ts). */
import { expect } from 'chai';
import { JsonLines, LayerTally } from '../../../src/engine/docker/pull-stream';
import { repoDigestsOf } from '../../../src/engine/docker/images';
import { ImagePullError } from '../../../src/engine/errors';

const REF = '10.0.0.1:5000/tmp/x:1';
const D = `sha256:${'a'.repeat(64)}`;

function tally(stream: string): LayerTally {
  const t = new LayerTally();
  const lines = new JsonLines();
  for (const m of [...lines.push(stream), ...lines.end()]) t.take(REF, m);
  return t;
}

describe('the pull stream', () => {
  it('the classic store: bytes summed per layer from Downloading, a layer already there counts nothing, the digest kept', () => {
    const t = tally(
      [
        '{"status":"Pulling from tmp/x","id":"1"}',
        '{"status":"Already exists","progressDetail":{},"id":"base"}',
        '{"status":"Pulling fs layer","progressDetail":{},"id":"l1"}',
        '{"status":"Downloading","progressDetail":{"current":100,"total":400},"id":"l1"}',
        '{"status":"Downloading","progressDetail":{"current":300,"total":400},"id":"l1"}',
        '{"status":"Download complete","progressDetail":{},"id":"l1"}',
        '{"status":"Pull complete","progressDetail":{},"id":"l1"}',
        `{"status":"Digest: ${D}"}`,
      ].join('\n'),
    );
    expect(t.progress()).to.deep.equal({ done: 400, total: 400 });
    expect(t.unsized).to.equal(0);
    expect(t.digest).to.equal(D);
  });

  it("the containerd store: a layer fetched before its first progress report has no size (the pull reports the image's size instead)", () => {
    // Docker 28.5 with containerd-snapshotter, a 4 MiB layer from a registry on this host
    const t = tally(
      [
        '{"status":"Pulling from tmp/x","id":"4194304"}',
        '{"status":"Pulling fs layer","progressDetail":{},"id":"e6a71236aaa8"}',
        '{"status":"Download complete","progressDetail":{"hidecounts":true},"id":"e6a71236aaa8"}',
        '{"status":"Pull complete","progressDetail":{"hidecounts":true},"id":"e6a71236aaa8"}',
        `{"status":"Digest: ${D}"}`,
        '{"status":"Status: Downloaded newer image for 10.0.0.1:5000/tmp/x:4194304"}',
      ].join('\n'),
    );
    expect(t.progress()).to.deep.equal({ done: 0, total: 0 });
    expect(t.unsized).to.equal(1);
    expect(t.digest).to.equal(D);
  });

  it('an errorDetail after the 200 is a failure, of its kind', () => {
    expect(() => tally('{"status":"Pulling fs layer","id":"l1"}\n{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}'))
      .to.throw(ImagePullError)
      .with.property('kind', 'not-found');
  });
});

describe("an image list's repo digests", () => {
  const D = `sha256:${'b'.repeat(64)}`;
  it("kept as name@digest; a bare digest (the containerd store, a registry with a port) gets each tag's repository", () => {
    expect(repoDigestsOf([`docker.io/library/x@${D}`], ['x:1'])).to.deep.equal([`docker.io/library/x@${D}`]);
    expect(repoDigestsOf([D], ['10.213.0.1:36277/tmp/x:1', '10.213.0.1:36277/tmp/x:latest', 'other/y:2'])).to.deep.equal([
      `10.213.0.1:36277/tmp/x@${D}`,
      `other/y@${D}`,
    ]);
    expect(repoDigestsOf([D], []), 'no tag: no repository to name').to.deep.equal([]);
    expect(repoDigestsOf(['<none>@<none>'], ['x:1'])).to.deep.equal([]);
    expect(repoDigestsOf(null, ['x:1'])).to.deep.equal([]);
  });
});
