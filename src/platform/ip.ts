import { isIP } from 'node:net'

/**
 * The client address: the socket's peer, or — only when that peer is a configured trusted proxy —
 * the right-most untrusted address of X-Forwarded-For. A client can never pick its own address.
 */
export function clientIp(peer: string, forwardedFor: string | null, trustedProxies: readonly string[]): string {
  const normalizedPeer = normalize(peer)
  if (!forwardedFor || !trustedProxies.some((p) => normalize(p) === normalizedPeer)) return normalizedPeer
  const hops = forwardedFor
    .split(',')
    .map((s) => normalize(s.trim()))
    .filter((s) => isIP(s) !== 0)
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!trustedProxies.some((p) => normalize(p) === hops[i])) return hops[i]!
  }
  return normalizedPeer
}

function normalize(ip: string): string {
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  return (v4mapped ? v4mapped[1]! : ip).toLowerCase()
}

/** The network a rate limit counts by: /24 for IPv4, /64 for IPv6. */
export function ipPrefix(ip: string): string {
  const kind = isIP(ip)
  if (kind === 4) return ip.split('.').slice(0, 3).join('.') + '.0/24'
  if (kind === 6) return expandV6(ip).slice(0, 4).join(':') + '::/64'
  return ip
}

function expandV6(ip: string): string[] {
  // An embedded IPv4 tail (RFC 4291 §2.2, e.g. 2001::3:4:5:1.2.3.4) stands for two 16-bit groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip)
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    ip = `${ip.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail = ''] = ip.split('::')
  const h = head ? head.split(':') : []
  const t = ip.includes('::') ? (tail ? tail.split(':') : []) : []
  const fill = ip.includes('::') ? Array(8 - h.length - t.length).fill('0') : []
  return [...h, ...fill, ...t].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
}
