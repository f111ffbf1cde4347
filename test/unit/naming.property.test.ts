/**
 * Engine names never collide (CONTRACT.md, "What a mistake never does"): no two different
 * (instance, attempt, role) combinations map to one name, whatever names users choose.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { LEGACY_NAMING, NAMING } from '../../src/constants';

/** Instance names as `--instance` accepts them; attempt names as the schema does (DNS-1123 labels). */
const instance = fc.stringMatching(/^[a-z0-9]([a-z0-9_.-]{0,6}[a-z0-9])?$/);
const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/);
/** Sidecar and volume names, including the reserved proxy name and words the scheme uses. */
const part = fc.oneof(label, fc.constantFrom('egress-proxy', 'sc', 'egress', 'v', 'sc-tools', 'v_x'));

type Role = { kind: 'main' } | { kind: 'egress' } | { kind: 'sidecar'; name: string } | { kind: 'volume'; name: string };
const role: fc.Arbitrary<Role> = fc.oneof(
  fc.constant({ kind: 'main' } as Role),
  fc.constant({ kind: 'egress' } as Role),
  part.map((name): Role => ({ kind: 'sidecar', name })),
  part.map((name): Role => ({ kind: 'volume', name })),
);

/** The engine keeps containers, networks and volumes in separate name spaces. */
function named(i: string, a: string, r: Role): { space: string; name: string } {
  switch (r.kind) {
    case 'main':
      return { space: 'container', name: NAMING.container(i, a) };
    case 'sidecar':
      return { space: 'container', name: NAMING.sidecar(i, a, r.name) };
    case 'egress':
      return { space: 'network', name: NAMING.egressNetwork(i, a) };
    case 'volume':
      return { space: 'volume', name: NAMING.volume(i, a, r.name) };
  }
}

/** Reads a name back: the instance ends at the first lone `_` (its own are doubled). */
function decode(space: string, name: string): { i: string; a: string; r: Role } {
  expect(name.startsWith('berth_')).to.equal(true);
  let k = 'berth_'.length;
  let i = '';
  for (;;) {
    const ch = name[k];
    if (ch === undefined) throw new Error(`no separator in ${name}`);
    if (ch === '_' && name[k + 1] === '_') {
      i += '_';
      k += 2;
    } else if (ch === '_') {
      k++;
      break;
    } else {
      i += ch;
      k++;
    }
  }
  const rest = name.slice(k);
  const cut = rest.indexOf('_');
  const a = cut < 0 ? rest : rest.slice(0, cut);
  const tail = cut < 0 ? '' : rest.slice(cut + 1);
  if (space === 'container') return tail === '' ? { i, a, r: { kind: 'main' } } : { i, a, r: { kind: 'sidecar', name: tail.replace(/^sc_/, '') } };
  if (space === 'network') return { i, a, r: tail === 'egress' ? { kind: 'egress' } : { kind: 'main' } };
  return { i, a, r: { kind: 'volume', name: tail.replace(/^v_/, '') } };
}

describe('engine names', function () {
  it('the collisions of the old naming are gone', function () {
    // attempt `c`'s sidecar `tools` and attempt `c-sc-tools`
    expect(LEGACY_NAMING.sidecar('i', 'c', 'tools')).to.equal(LEGACY_NAMING.container('i', 'c-sc-tools'));
    expect(NAMING.sidecar('i', 'c', 'tools')).to.not.equal(NAMING.container('i', 'c-sc-tools'));
    // instance `x-y` with attempt `z`, and instance `x` with attempt `y-z`
    expect(LEGACY_NAMING.container('x-y', 'z')).to.equal(LEGACY_NAMING.container('x', 'y-z'));
    expect(NAMING.container('x-y', 'z')).to.not.equal(NAMING.container('x', 'y-z'));
    // instances with `_` cannot pose as a separator
    expect(NAMING.container('a_b', 'c')).to.not.equal(NAMING.network('a', 'b'));
    expect(NAMING.egressNetwork('a', 'b')).to.not.equal(NAMING.network('a_b', 'egress'));
  });

  it('every name decodes back to its one (instance, attempt, role): no two map to one name (property)', function () {
    fc.assert(
      fc.property(instance, label, role, (i, a, r) => {
        const { space, name } = named(i, a, r);
        expect(decode(space, name)).to.deep.equal({ i, a, r });
      }),
      { numRuns: 5000 },
    );
  });

  it('names are valid engine names', function () {
    fc.assert(
      fc.property(instance, label, role, (i, a, r) => {
        expect(named(i, a, r).name).to.match(/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/);
      }),
    );
  });
});
