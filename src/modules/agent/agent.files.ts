import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'

/**
 * The reference agent, served by the service itself so an owner can install it with one line:
 * GET /agent/install.sh and GET /agent/gpuhq-agent.tar.gz (what install.sh downloads). The tarball
 * is a plain ustar archive built in memory from agent/ once, then gzipped.
 */
const AGENT_DIR = resolve(import.meta.dir, '../../../agent')

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0'
}

function header(name: string, size: number, mode: number, mtime: number): Buffer {
  const h = Buffer.alloc(512)
  h.write(name, 0, 100, 'utf8')
  h.write(octal(mode, 8), 100)
  h.write(octal(0, 8), 108)
  h.write(octal(0, 8), 116)
  h.write(octal(size, 12), 124)
  h.write(octal(mtime, 12), 136)
  h.write('        ', 148) // checksum counted as spaces
  h.write('0', 156)
  h.write('ustar\0', 257)
  h.write('00', 263)
  let sum = 0
  for (const b of h) sum += b
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  return h
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name)
    if (e.isDirectory()) return files(p)
    return e.isFile() ? [p] : []
  })
}

let cached: Uint8Array | null = null

export function agentTarball(): Uint8Array {
  if (cached) return cached
  const parts: Buffer[] = []
  for (const file of files(AGENT_DIR).sort()) {
    const name = relative(AGENT_DIR, file)
    if (name.length > 99) continue
    const body = readFileSync(file)
    const st = statSync(file)
    parts.push(header(name, body.length, name.endsWith('.sh') ? 0o755 : 0o644, Math.floor(st.mtimeMs / 1000)), body)
    const pad = (512 - (body.length % 512)) % 512
    if (pad) parts.push(Buffer.alloc(pad))
  }
  parts.push(Buffer.alloc(1024))
  cached = Bun.gzipSync(Buffer.concat(parts))
  return cached
}

export function installScript(): string {
  return readFileSync(join(AGENT_DIR, 'install.sh'), 'utf8')
}
