/**
 * A sidecar's listener serves its sidecar only: a connection is served when its peer address is
 * the one the sidecar's name resolves to (its container name on the attempt's network, which only
 * the engine answers for; containers hold no capability to take another's address). The answer is
 * kept, and looked up again when a peer does not match (the sidecar made again has a new address).
 */
import dns from 'node:dns';
import net from 'node:net';

export type AddressLookup = (name: string) => Promise<string[]>;

const systemLookup: AddressLookup = async (name) => (await dns.promises.lookup(name, { all: true, family: 4 })).map((a) => a.address);

export class SourceGate {
  private known = new Set<string>();

  constructor(
    readonly source: string,
    private readonly lookup: AddressLookup = systemLookup,
  ) {}

  /** Whether `peer` (a socket's remoteAddress) is the source. Never rejects. */
  async allows(peer: string | undefined): Promise<boolean> {
    if (peer === undefined) return false;
    const addr = peer.startsWith('::ffff:') ? peer.slice(7) : peer;
    if (net.isIP(this.source) !== 0) return addr === this.source;
    if (this.known.has(addr)) return true;
    try {
      this.known = new Set(await this.lookup(this.source));
    } catch {
      return false;
    }
    return this.known.has(addr);
  }
}
