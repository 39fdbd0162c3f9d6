import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

/**
 * Where a webhook may not go unless WEBHOOK_ALLOW_PRIVATE: loopback, private, link-local (which holds the
 * 169.254.169.254 cloud metadata service), CGNAT, and the other special-purpose ranges no public service uses.
 */
const blocked = new BlockList()
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, bits, 'ipv4')
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net, bits, 'ipv6')

/** IPv4-mapped and IPv4-compatible IPv6 addresses are judged by the IPv4 address they carry. */
function embeddedV4(address: string): string | null {
  const m = /^::(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (m) return m[1]
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
  if (!hex) return null
  const [hi, lo] = [parseInt(hex[1], 16), parseInt(hex[2], 16)]
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
}

export function isBlockedAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return blocked.check(address, 'ipv4')
  if (family !== 6) return true
  const v4 = embeddedV4(address)
  return v4 ? blocked.check(v4, 'ipv4') : blocked.check(address, 'ipv6')
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
