import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Where a webhook may go unless WEBHOOK_ALLOW_PRIVATE: only addresses ipaddr.js calls `unicast`, i.e. none of the
 * special-purpose ranges it keeps (loopback, private, link-local with the 169.254.169.254 cloud metadata service,
 * CGNAT, unique-local, multicast, documentation, benchmarking, reserved…).
 *
 * An IPv6 address that carries an IPv4 address is judged by the IPv4 address as well, since the packet may well
 * end up there: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`), the deprecated
 * IPv4-compatible form (`::a.b.c.d`, which ipaddr.js reports as plain unicast), NAT64 (`64:ff9b::a.b.c.d`), 6to4
 * (`2002:AABB:CCDD::`) and Teredo (server and client addresses). The local-use NAT64 prefix (`64:ff9b:1::/48`)
 * places the IPv4 address where its operator's prefix length says, so it is refused whole.
 */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96')
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96')

const fromParts = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255])

/** The IPv4 addresses an IPv6 address carries; null when it is a form whose IPv4 part cannot be told. */
function carried(address: ipaddr.IPv6): ipaddr.IPv4[] | null {
  const p = address.parts
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return [fromParts(p[6], p[7])]
    case 'rfc6052':
      return address.match(NAT64_WELL_KNOWN) ? [fromParts(p[6], p[7])] : null
    case '6to4':
      return [fromParts(p[1], p[2])]
    case 'teredo':
      return [fromParts(p[2], p[3]), fromParts(p[6] ^ 0xffff, p[7] ^ 0xffff)]
  }
  // `::` and `::1` are ranges of their own; the rest of ::/96 is IPv4-compatible.
  if (address.range() === 'unicast' && address.match(IPV4_COMPATIBLE)) return [fromParts(p[6], p[7])]
  return []
}

export function isBlockedAddress(address: string): boolean {
  if (!isIP(address)) return true
  const parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast'
  const inner = carried(parsed as ipaddr.IPv6)
  if (inner === null) return true
  if (inner.length > 0) return inner.some((v4) => v4.range() !== 'unicast')
  return parsed.range() !== 'unicast'
}

export interface UrlRules {
  allowHttp: boolean
  allowPrivate: boolean
}

/** Where an attempt connects, once its URL passed the checks, and what the request says of the endpoint's host. */
export interface Target {
  /** The endpoint's URL, its host name replaced by the address that was checked when there was one to check. */
  url: string
  /** With an address in `url`: the endpoint's own host as the Host header. */
  headers: Record<string, string>
  /** With an address in an https `url`: the endpoint's host name for SNI and the certificate check. */
  tls?: { serverName: string }
}

/**
 * The URL's checks, and the address to connect to when its host is a name that had to be resolved: every address
 * DNS gives must be public, and the connection goes to one of those very addresses, so a second lookup by the
 * client (answering differently: DNS rebinding) never decides where the request goes. An IPv4 address is
 * preferred, as a client without IPv6 routing would otherwise fail where a browser falls back.
 */
async function check(raw: string, rules: UrlRules): Promise<{ refused: string } | { url: URL; address: string | null }> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { refused: 'not a URL' }
  }
  if (url.protocol !== 'https:' && !(rules.allowHttp && url.protocol === 'http:')) return { refused: rules.allowHttp ? 'scheme must be https or http' : 'scheme must be https' }
  if (url.username || url.password) return { refused: 'credentials in the URL are not accepted' }
  if (rules.allowPrivate) return { url, address: null }
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host)) return isBlockedAddress(host) ? { refused: 'blocked address' } : { url, address: null }
  let addresses: { address: string; family: number }[]
  try {
    addresses = await lookup(host, { all: true, verbatim: true })
  } catch {
    return { refused: 'host does not resolve' }
  }
  if (addresses.length === 0) return { refused: 'host does not resolve' }
  if (addresses.some((a) => isBlockedAddress(a.address))) return { refused: 'blocked address' }
  return { url, address: (addresses.find((a) => a.family === 4) ?? addresses[0]).address }
}

/** Why `raw` may not receive webhooks, or null when it may. Resolves the host: every address it has must be public. */
export async function refusal(raw: string, rules: UrlRules): Promise<string | null> {
  const checked = await check(raw, rules)
  return 'refused' in checked ? checked.refused : null
}

/** Where an attempt to `raw` connects (see `check`), or why it may not be made. */
export async function sendTarget(raw: string, rules: UrlRules): Promise<Target | { refused: string }> {
  const checked = await check(raw, rules)
  if ('refused' in checked) return checked
  const { url, address } = checked
  return address === null ? { url: raw, headers: {} } : pinned(url, address)
}

/** `url` sent to `address`, still naming its own host to the server (Host header) and to TLS (SNI, certificate check). */
export function pinned(url: URL, address: string): Target {
  const to = new URL(url)
  to.hostname = isIP(address) === 6 ? `[${address}]` : address
  return { url: to.toString(), headers: { host: url.host }, ...(url.protocol === 'https:' && { tls: { serverName: url.hostname } }) }
}
