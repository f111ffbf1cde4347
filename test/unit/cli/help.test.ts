/** The top-level --help: what a user needs against a sick engine is on its first screen (issue 37). */
import { expect } from 'chai';
import { run } from '../../../src/cli/index';
import { bufferIo } from '../../../src/cli/io';
import { DEFAULTS } from '../../../src/constants';

/** Lines of a 24-line terminal that `berth --help | less` shows first, one left for the pager. */
const FIRST_SCREEN = 23;

describe('berth --help', () => {
  it('shows --engine-timeout, what it bounds and its default on its first screen', async () => {
    const io = bufferIo();
    const code = await run(['node', 'berth', '--help'], io);
    expect(code).to.equal(0);
    const lines = io.stdout.split('\n');
    const first = lines.slice(0, FIRST_SCREEN).join('\n');
    expect(first).to.match(/^ {2}--engine-timeout <duration> /m);
    expect(first).to.include(`(default: ${DEFAULTS.engineTimeoutMs / 1000}s)`);
    expect(first).to.match(/says the engine does not/);
  });
});
