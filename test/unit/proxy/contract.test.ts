/** The readiness line berth waits for: recognized exactly, anything else ignored. */
import { expect } from 'chai';
import { parseListeningLine } from '../../../src/proxy/contract';
import { listeningLine } from '../../../src/proxy/log-lines';

describe('proxy/contract', () => {
  it('recognizes the listening line the proxy prints', () => {
    const line = listeningLine(3128, ['a.com:443', '*.b.com:443']);
    expect(line).to.equal('{"event":"listening","port":3128,"allow":["a.com:443","*.b.com:443"]}');
    expect(parseListeningLine(line)).to.deep.equal({ event: 'listening', port: 3128, allow: ['a.com:443', '*.b.com:443'] });
  });

  it('ignores other lines', () => {
    for (const l of [
      '',
      'listening',
      '{"event":"decision"}',
      '{"event":"listening","port":"1","allow":[]}',
      '{"event":"listening","port":1,"allow":[1]}',
      'null',
    ]) {
      expect(parseListeningLine(l), l).to.equal(undefined);
    }
  });
});
