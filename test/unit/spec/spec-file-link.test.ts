/** A spec file that is a link leaving its folder is never read; one swapped for a link after the walk is not read through. */
import { expect } from 'chai';
import { symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { loadFile } from '../../../src/spec/load-file';
import { loadPaths } from '../../../src/spec/loader';
import { cleanupTemp, sandbox, tempDir } from './helpers';

describe('spec/spec files that are links', () => {
  afterEach(cleanupTemp);

  it('a file named on the command line that links out of its folder: an error naming it, never its content', async () => {
    const host = path.join(tempDir(), 'host.txt');
    writeFileSync(host, 'host-secret-content\n');
    const sb = sandbox({});
    symlinkSync(host, path.join(sb.specs, 'x.yaml'));
    const r = await loadPaths([path.join(sb.specs, 'x.yaml')], { resultsRoot: sb.results });
    expect(r.errors.map((e) => [path.basename(e.file), e.code])).to.deep.equal([['x.yaml', 'path-escape']]);
    expect(r.errors[0]?.message).to.equal(`links outside its folder (to ${host}); not read`);
    expect(JSON.stringify(r)).to.not.include('host-secret-content');
  });

  it('a file the walk found regular and that is a link by the time it is read: not read through', async () => {
    const host = path.join(tempDir(), 'host.txt');
    writeFileSync(host, 'host-secret-content\n');
    const sb = sandbox({});
    symlinkSync(host, path.join(sb.specs, 'x.yaml'));
    const roots = { specsRoot: sb.specs, specsReal: sb.specs, resultsRoot: sb.results, resultsReal: sb.results };
    const out = await loadFile({ abs: path.join(sb.specs, 'x.yaml'), rel: 'x.yaml' }, 'x.yaml', roots);
    expect(out.unreadable).to.equal(true);
    expect(out.errors.map((e) => e.message)).to.deep.equal(['cannot read: too many levels of symbolic links']);
  });
});
