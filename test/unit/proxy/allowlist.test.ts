/** Allowlist parsing and matching: exact names, IPv4 literals, wildcards, case, trailing dots, ports. */
import { expect } from 'chai';
import { type Allowlist, findAllowing, parseAllowEntry, parseAllowlist } from '../../../src/proxy/allowlist';
import { parseHost } from '../../../src/proxy/host';

function list(raw: string): Allowlist {
  const parsed = parseAllowlist(raw);
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  return parsed.value;
}

/** True when `hostPort` (as a client would write it) is allowed by `raw`. */
function allows(raw: string, host: string, port: number): boolean {
  const h = parseHost(host);
  if (!h.ok) throw new Error(`test host ${host}: ${h.reason}`);
  return findAllowing(list(raw), h.value, port) !== undefined;
}

function entryError(raw: string): string {
  const parsed = parseAllowEntry(raw);
  if (parsed.ok) throw new Error(`${raw} parsed as ${parsed.value.text}`);
  return parsed.reason;
}

describe('proxy/allowlist', () => {
  describe('parsing', () => {
    it('normalizes entries: lower case, trailing dot dropped, whitespace trimmed, duplicates dropped', () => {
      expect(list(' API.Example.COM.:443 , *.Example.com:443,10.0.0.1:8080, api.example.com:443').entries).to.deep.equal([
        { text: 'api.example.com:443', host: 'api.example.com', wildcard: false, port: 443 },
        { text: '*.example.com:443', host: 'example.com', wildcard: true, port: 443 },
        { text: '10.0.0.1:8080', host: '10.0.0.1', wildcard: false, port: 8080 },
      ]);
    });

    it('takes an empty or blank list as "deny everything"', () => {
      expect(list('').entries).to.deep.equal([]);
      expect(list('  ').entries).to.deep.equal([]);
    });

    it('accepts container-style names with "_" and single labels', () => {
      expect(list('my_db-1:5432,allowed:8080').entries.map((e) => e.text)).to.deep.equal(['my_db-1:5432', 'allowed:8080']);
    });

    it('refuses invalid entries, each with a reason', () => {
      const cases: [string, RegExp][] = [
        ['example.com', /missing :port/],
        ['example.com:', /invalid port/],
        ['example.com:0', /invalid port/],
        ['example.com:65536', /invalid port/],
        ['example.com:080', /invalid port/],
        ['example.com:+80', /invalid port/],
        ['http://example.com:80', /without a scheme/],
        ['example.com:80/path', /without a path/],
        ['user@example.com:80', /without a path or user/],
        ['*:443', /bare \*/],
        ['*.:443', /empty host/],
        ['a.*.example.com:443', /wildcard must be the whole first label/],
        ['*example.com:443', /wildcard must be the whole first label/],
        ['*.10.0.0.1:443', /wildcard needs a host name suffix/],
        ['*.0.1:443', /numeric label/],
        ['[::1]:443', /IPv6/],
        ['::1:443', /IPv6/],
        ['256.1.1.1:80', /invalid IPv4/],
        ['010.0.0.1:80', /invalid IPv4/],
        ['2130706433:80', /numeric label/],
        ['0x7f.1:80', /numeric label/],
        ['exa mple.com:80', /invalid host name/],
        ['-bad.com:80', /invalid host name/],
        ['ex%61mple.com:80', /invalid host name/],
        ['a..b:80', /invalid host name/],
        [`${'a'.repeat(64)}.com:80`, /invalid host name/],
        [`${'abcdefghi.'.repeat(26)}com:80`, /longer than 253/],
      ];
      for (const [raw, reason] of cases) expect(entryError(raw), raw).to.match(reason);
    });

    it('reports every bad entry of a list with its position, and no entries', () => {
      const parsed = parseAllowlist('ok.com:443,,bad,*:1');
      expect(parsed.ok).to.equal(false);
      if (parsed.ok) return;
      expect(parsed.errors).to.deep.equal([
        'entry 2 "": empty entry',
        'entry 3 "bad": missing :port',
        'entry 4 "*:1": a bare * would allow every host; write *.example.com',
      ]);
    });
  });

  describe('matching', () => {
    it('matches an exact name on its port only', () => {
      expect(allows('api.example.com:443', 'api.example.com', 443)).to.equal(true);
      expect(allows('api.example.com:443', 'api.example.com', 80)).to.equal(false);
      expect(allows('api.example.com:443', 'example.com', 443)).to.equal(false);
      expect(allows('api.example.com:443', 'x.api.example.com', 443)).to.equal(false);
      expect(allows('api.example.com:443', 'api.example.com.evil.com', 443)).to.equal(false);
      expect(allows('api.example.com:443', 'evilapi.example.com', 443)).to.equal(false);
    });

    it('ignores case and one trailing dot, on both sides', () => {
      expect(allows('Api.Example.com.:443', 'API.EXAMPLE.COM', 443)).to.equal(true);
      expect(allows('api.example.com:443', 'api.example.com.', 443)).to.equal(true);
      expect(allows('LOCALHOST:8080', 'localhost.', 8080)).to.equal(true);
    });

    it('matches a wildcard on any subdomain, at any depth, but not the bare domain', () => {
      const w = '*.example.com:443';
      expect(allows(w, 'a.example.com', 443)).to.equal(true);
      expect(allows(w, 'a.b.example.com', 443)).to.equal(true);
      expect(allows(w, 'A.EXAMPLE.COM.', 443)).to.equal(true);
      expect(allows(w, 'example.com', 443)).to.equal(false);
      expect(allows(w, 'badexample.com', 443)).to.equal(false);
      expect(allows(w, 'a.example.com.evil.org', 443)).to.equal(false);
      expect(allows(w, 'a.example.com', 8443)).to.equal(false);
    });

    it('matches an IPv4 literal only as that literal: no name, no other spelling reaches it', () => {
      expect(allows('127.0.0.1:9000', '127.0.0.1', 9000)).to.equal(true);
      expect(allows('127.0.0.1:9000', '127.0.0.1', 9001)).to.equal(false);
      expect(allows('127.0.0.1:9000', 'localhost', 9000)).to.equal(false);
      expect(allows('127.0.0.1:9000', '127.0.0.2', 9000)).to.equal(false);
      for (const sneaky of ['2130706433', '0x7f000001', '0177.0.0.1', '127.1', '[::ffff:127.0.0.1]']) {
        expect(parseHost(sneaky).ok, sneaky).to.equal(false);
      }
    });

    it('a name entry never matches an address, even one the name resolves to', () => {
      expect(allows('localhost:9000', '127.0.0.1', 9000)).to.equal(false);
      expect(allows('localhost:9000', 'localhost', 9000)).to.equal(true);
    });

    it('denies everything with an empty list', () => {
      expect(allows('', 'example.com', 443)).to.equal(false);
    });
  });
});
