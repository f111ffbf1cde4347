/** Memory quantities: Kubernetes units, exact arithmetic, helpful refusals. */
import { expect } from 'chai';
import { MAX_MEMORY_BYTES, MIN_MEMORY_BYTES, parseByteSize, parseMemory, toBytes } from '../../../src/spec/quantity';

describe('spec/quantity', () => {
  it('reads binary and decimal units the Kubernetes way', () => {
    const cases: [string | number, number][] = [
      ['64Ki', 64 * 1024],
      ['512Mi', 512 * 1024 ** 2],
      ['1Gi', 1024 ** 3],
      ['2Ti', 2 * 1024 ** 4],
      ['1Pi', 1024 ** 5],
      ['1k', 1000],
      ['500M', 500e6],
      ['1G', 1e9],
      ['3T', 3e12],
      ['1P', 1e15],
      ['1.5Gi', 1.5 * 1024 ** 3],
      ['0.1M', 100000],
      ['268435456', 268435456],
      [268435456, 268435456],
    ];
    for (const [input, bytes] of cases) expect(toBytes(input), String(input)).to.equal(BigInt(bytes));
  });

  it('rounds fractions up to whole bytes, exactly', () => {
    expect(toBytes('0.5')).to.equal(1n);
    expect(toBytes('1.0000001k')).to.equal(1001n);
    expect(toBytes('0.3Ki')).to.equal(308n); // 307.2
  });

  it('refuses what is not a quantity, with a hint', () => {
    expect(toBytes('1K')).to.equal('unknown unit "K" in "1K": use k (1000) or Ki (1024)');
    expect(toBytes('512m')).to.match(/"m" would mean 1\/1000 of a byte/);
    expect(toBytes('1GB')).to.equal('unknown unit "GB" in "1GB": use Gi (1024-based) or G (1000-based)');
    expect(toBytes('1gi')).to.match(/use Gi/);
    expect(toBytes('1Xi')).to.match(/use one of Ki Mi Gi Ti Pi Ei/);
    for (const bad of ['', ' 1Gi', '1 Gi', '-1Gi', '1e9', '.5Gi', '1.Gi', 'Gi']) expect(toBytes(bad), bad).to.be.a('string');
    expect(toBytes(0)).to.be.a('string');
    expect(toBytes(1.5)).to.be.a('string');
    expect(toBytes('0')).to.equal('must be more than 0 bytes (got "0")');
  });

  it('checks the range: at least 6Mi, at most 1Pi', () => {
    expect(parseMemory('6Mi')).to.deep.equal({ ok: true, bytes: MIN_MEMORY_BYTES });
    expect(parseMemory('1Pi')).to.deep.equal({ ok: true, bytes: MAX_MEMORY_BYTES });
    expect(parseMemory(MIN_MEMORY_BYTES - 1).ok).to.equal(false);
    expect(parseMemory('1025Ti').ok).to.equal(false);
    expect(parseMemory('99999999999999999999999999999Ei').ok).to.equal(false);
  });
});

describe('spec/quantity: sizes on the command line and in the environment (one grammar)', () => {
  it("reads the spec's quantities and plain byte counts, 0 where the minimum allows", () => {
    expect(parseByteSize('64Ki')).to.deep.equal({ ok: true, bytes: 65536 });
    expect(parseByteSize(' 4Gi ')).to.deep.equal({ ok: true, bytes: 4 * 1024 ** 3 });
    expect(parseByteSize('500M')).to.deep.equal({ ok: true, bytes: 500_000_000 });
    expect(parseByteSize('65536')).to.deep.equal({ ok: true, bytes: 65536 });
    expect(parseByteSize('0')).to.deep.equal({ ok: true, bytes: 0 });
  });

  it('refuses what is below the minimum, and says what a unit of another grammar would mean', () => {
    expect(parseByteSize('0', 1024)).to.deep.equal({ ok: false, message: 'must be at least 1024 bytes (got 0)' });
    expect(parseByteSize('1Ki', 2048).ok).to.equal(false);
    const m = parseByteSize('32m');
    expect(m.ok).to.equal(false);
    expect(m.ok ? '' : m.message).to.contain('use Mi');
    expect(parseByteSize('16g').ok).to.equal(false);
  });
});
