/** `host:port` (`[v6]:port`; an empty host is 127.0.0.1), as `flag` gives it; an error shows `example`. */
export function parseAddr(addr: string, flag: string, example: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  const port = Number(m?.[3]);
  if (!m || port > 65535) throw new Error(`${flag} ${JSON.stringify(addr)}: expected host:port, e.g. ${example}`);
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}
