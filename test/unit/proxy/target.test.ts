/** Request targets and headers: CONNECT authorities, absolute URIs, Host agreement, hop-by-hop removal. */
import { expect } from 'chai';
import { checkHostHeader, endToEndHeaders } from '../../../src/proxy/headers';
import { type HttpTarget, hostHeaderFor, parseConnectTarget, parseHttpTarget } from '../../../src/proxy/target';

function http(url: string): HttpTarget {
  const parsed = parseHttpTarget(url);
  if (!parsed.ok) throw new Error(`${url}: ${parsed.reason}`);
  return parsed.value;
}

function httpError(url: string): string {
  const parsed = parseHttpTarget(url);
  if (parsed.ok) throw new Error(`${url} parsed as ${parsed.value.text}`);
  return parsed.reason;
}

describe('proxy/target', () => {
  describe('CONNECT targets', () => {
    it('parses host:port, normalized', () => {
      const t = parseConnectTarget('API.Example.com.:443');
      expect(t.ok && t.value).to.deep.equal({ host: 'api.example.com', kind: 'name', port: 443, text: 'api.example.com:443' });
      const ip = parseConnectTarget('10.0.0.1:8443');
      expect(ip.ok && ip.value.kind).to.equal('ipv4');
    });

    it('requires the port and refuses userinfo, IPv6 and numeric tricks', () => {
      const reason = (s: string): string => {
        const p = parseConnectTarget(s);
        return p.ok ? 'ok' : p.reason;
      };
      expect(reason('example.com')).to.match(/missing :port/);
      expect(reason('user@example.com:443')).to.match(/userinfo/);
      expect(reason('[::1]:443')).to.match(/IPv6/);
      expect(reason('2130706433:443')).to.match(/numeric label/);
      expect(reason('example.com:443/x')).to.match(/invalid port/);
      expect(reason('')).to.match(/missing :port/);
    });
  });

  describe('absolute URIs', () => {
    it('parses host, port (80 by default) and path+query, dropping the fragment', () => {
      expect(http('http://Example.com/a/b?c=d#frag')).to.deep.equal({
        host: 'example.com',
        kind: 'name',
        port: 80,
        text: 'example.com:80',
        path: '/a/b?c=d',
      });
      expect(http('HTTP://example.com:8080').path).to.equal('/');
      expect(http('http://example.com:8080?q=1').path).to.equal('/?q=1');
      expect(http('http://127.0.0.1:9/x').text).to.equal('127.0.0.1:9');
    });

    it('refuses origin-form, other schemes, userinfo and hosts outside the grammar', () => {
      expect(httpError('/index.html')).to.match(/origin-form/);
      expect(httpError('*')).to.match(/origin-form/);
      expect(httpError('https://example.com/')).to.match(/scheme https .*CONNECT/);
      expect(httpError('ftp://example.com/')).to.match(/scheme ftp/);
      expect(httpError('example.com:80')).to.match(/not an absolute URI/);
      expect(httpError('http://user@example.com/')).to.match(/userinfo/);
      expect(httpError('http://allowed.com:80@evil.com/')).to.match(/userinfo/);
      expect(httpError('http://allowed.com\\@evil.com/')).to.match(/userinfo/);
      expect(httpError('http://allowed.com\\evil.com/')).to.match(/invalid host name/);
      expect(httpError('http://ex%61mple.com/')).to.match(/invalid host name/);
      expect(httpError('http://[::1]:80/')).to.match(/IPv6/);
      expect(httpError('http://0x7f.1/')).to.match(/numeric label/);
      expect(httpError('http:///path')).to.match(/empty host/);
    });

    it('writes the Host header without the default port', () => {
      expect(hostHeaderFor(http('http://example.com/'))).to.equal('example.com');
      expect(hostHeaderFor(http('http://example.com:8080/'))).to.equal('example.com:8080');
    });
  });

  describe('Host header agreement', () => {
    const t = http('http://example.com:8080/');
    it('accepts a matching Host (any case, trailing dot) or none', () => {
      expect(checkHostHeader(['Host', 'EXAMPLE.com.:8080'], t).ok).to.equal(true);
      expect(checkHostHeader(['Accept', '*/*'], t).ok).to.equal(true);
      expect(checkHostHeader(['host', 'example.com'], http('http://example.com/')).ok).to.equal(true);
    });

    it('refuses a different host or port, a bad value, or two Host headers, without quoting the value', () => {
      const r = (raw: string[]): string => {
        const c = checkHostHeader(raw, t);
        return c.ok ? 'ok' : c.reason;
      };
      expect(r(['Host', 'evil.com:8080'])).to.equal('the Host header disagrees with the request URI');
      expect(r(['Host', 'example.com'])).to.equal('the Host header disagrees with the request URI');
      expect(r(['Host', 'example.com:8080', 'Host', 'example.com:8080'])).to.equal('more than one Host header');
      expect(r(['Host', 'a b'])).to.equal('the Host header is not a valid host[:port]');
    });
  });

  describe('hop-by-hop headers', () => {
    it('drops hop-by-hop headers, Proxy-Authorization and what Connection names; keeps the rest in order', () => {
      const raw = [
        'Host',
        'x',
        'Connection',
        'keep-alive, X-Hop',
        'Keep-Alive',
        'timeout=5',
        'Proxy-Authorization',
        'Basic Zm9vOmJhcg==',
        'Proxy-Connection',
        'keep-alive',
        'X-Hop',
        'gone',
        'Authorization',
        'Bearer kept',
        'TE',
        'trailers',
        'Transfer-Encoding',
        'chunked',
        'Upgrade',
        'websocket',
        'Set-Cookie',
        'a=1',
        'Set-Cookie',
        'b=2',
      ];
      expect(endToEndHeaders(raw, ['host'])).to.deep.equal(['Authorization', 'Bearer kept', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2']);
    });
  });
});
