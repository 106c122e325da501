import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { hostname as osHostname, networkInterfaces } from 'node:os'

/**
 * The hardware fingerprint: "sha256:" + hex SHA-256 over facts that survive reboots, re-installs
 * of the agent and changes of hostname or IP: the OS machine id and the GPUs' UUIDs (sorted, so
 * enumeration order does not matter). It is a matching hint for the service, not a credential.
 */
export function fingerprint(facts: { machineId: string | null; gpuUuids: string[] }): string {
  const lines = [`machine-id:${facts.machineId ?? ''}`, ...[...new Set(facts.gpuUuids.filter(Boolean))].sort().map((u) => `gpu:${u}`)]
  return 'sha256:' + createHash('sha256').update(lines.join('\n')).digest('hex')
}

export function readMachineId(): string | null {
  for (const path of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const id = readFileSync(path, 'utf8').trim()
      if (id) return id
    } catch {
      // try the next location
    }
  }
  return null
}

export function hostname(): string {
  return osHostname().slice(0, 255)
}

/** True for an IPv4 address reachable from the internet (not private, loopback, CGNAT, link-local …). */
export function isPublicIpv4(ip: string): boolean {
  const p = ip.split('.').map(Number)
  if (p.length !== 4 || p.some((n) => !Number.isInteger(n) || n < 0 || n > 255)) return false
  const [a, b] = p as [number, number, number, number]
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false
  if (a === 100 && b >= 64 && b <= 127) return false // carrier-grade NAT
  if (a === 169 && b === 254) return false
  if (a === 172 && b >= 16 && b <= 31) return false
  if (a === 192 && b === 168) return false
  if (a === 192 && b === 0 && (p[2] === 0 || p[2] === 2)) return false
  if (a === 198 && (b === 18 || b === 19)) return false
  if (a === 198 && b === 51 && p[2] === 100) return false
  if (a === 203 && b === 0 && p[2] === 113) return false
  return true
}

/**
 * The public IPv4 address when a local interface carries one. Behind NAT it cannot be learned
 * without asking a third party, which the agent does not do: it is then omitted.
 */
export function localPublicIpv4(interfaces = networkInterfaces()): string | null {
  for (const list of Object.values(interfaces))
    for (const addr of list ?? []) if (addr.family === 'IPv4' && !addr.internal && isPublicIpv4(addr.address)) return addr.address
  return null
}

/** "40000-40199": two ports, low ≤ high. */
export function validPortRange(value: string): boolean {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(value)
  if (!m) return false
  const lo = Number(m[1])
  const hi = Number(m[2])
  return lo >= 1 && hi <= 65535 && lo <= hi
}

/** The first version number in a program's --version output ("Docker version 27.3.1, build ce12230" → "27.3.1"). */
export function versionIn(text: string): string | null {
  return /\b(\d+\.\d+(?:\.\d+)?(?:[-+~][0-9A-Za-z.+~-]*)?)/.exec(text)?.[1]?.slice(0, 64) ?? null
}
