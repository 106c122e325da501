import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'

/**
 * A local SMTP server (the `smtp-server` package) that the app's real nodemailer client talks to
 * over TCP: no TLS, no auth needed. It keeps every message it accepted, parsed just enough to read
 * To, Subject and the text and HTML parts. `refuse(true)` makes it answer 451 to every DATA, the
 * way a mail server with a temporary problem does, so retries can be tested.
 */
export type ReceivedMail = {
  to: string[]
  from: string
  subject: string
  /** The decoded text/plain part. */
  text: string
  /** The decoded text/html part ('' when none). */
  html: string
  /** The message exactly as received on the wire. */
  raw: string
  headers: Record<string, string>
}

export type FakeSmtp = {
  port: number
  /** SMTP_URL for the app: plain SMTP to this server, no STARTTLS. */
  url: string
  messages: ReceivedMail[]
  /** How many DATA commands were refused while refusing. */
  refusedCount: () => number
  refuse: (on: boolean) => void
  /** Messages to this address (case-insensitive). */
  to: (address: string) => ReceivedMail[]
  waitForMail: (to: string, predicate?: (m: ReceivedMail) => boolean, timeoutMs?: number) => Promise<ReceivedMail>
  clear: () => void
  close: () => Promise<void>
}

export async function startFakeSmtp(): Promise<FakeSmtp> {
  const messages: ReceivedMail[] = []
  let refusing = false
  let refused = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    // No reverse DNS of 127.0.0.1 for every connection: it only slows each delivery down.
    disableReverseLookup: true,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        if (refusing) {
          refused++
          const err = new Error('Requested action aborted: local error in processing') as Error & { responseCode: number }
          err.responseCode = 451
          return callback(err)
        }
        const raw = Buffer.concat(chunks).toString('utf8')
        const parsed = parseMessage(raw)
        messages.push({
          ...parsed,
          to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
        })
        callback(null, 'Message queued')
      })
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const port = (server as unknown as { server: { address(): AddressInfo } }).server.address().port
  const to = (address: string) => messages.filter((m) => m.to.includes(address.toLowerCase()))
  return {
    port,
    url: `smtp://127.0.0.1:${port}?starttls=false`,
    messages,
    refusedCount: () => refused,
    refuse: (on) => {
      refusing = on
    },
    to,
    async waitForMail(address, predicate = () => true, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = to(address).find(predicate)
        if (found) return found
        if (Date.now() > deadline) throw new Error(`no mail to ${address} within ${timeoutMs} ms (got ${messages.length} in all)`)
        await Bun.sleep(10)
      }
    },
    clear: () => {
      messages.length = 0
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** The 6-digit code standing alone on its own line of the text part, or throws. */
export function codeFrom(message: ReceivedMail): string {
  const codes = message.text.split(/\r?\n/).filter((l) => /^\d{6}$/.test(l.trim()))
  if (codes.length !== 1) throw new Error(`expected exactly one code line, found ${codes.length} in:\n${message.text}`)
  return codes[0]!.trim()
}

// --- a small MIME reader: enough for nodemailer's output (multipart/alternative, QP or base64) ---

type Part = { headers: Record<string, string>; body: string }

function splitHeaders(raw: string): Part {
  const at = raw.search(/\r?\n\r?\n/)
  const head = at < 0 ? raw : raw.slice(0, at)
  const body = at < 0 ? '' : raw.slice(at).replace(/^\r?\n\r?\n/, '')
  const headers: Record<string, string> = {}
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { headers, body }
}

function decodeWords(value: string): string {
  // RFC 2047 encoded words, which nodemailer uses for non-ASCII subjects.
  return value.replace(/=\?([^?]+)\?([bBqQ])\?([^?]*)\?=\s*/g, (_m, _charset, enc: string, text: string) =>
    enc.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(
          text.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_x, h: string) => String.fromCharCode(parseInt(h, 16))),
          'latin1',
        ).toString('utf8'),
  )
}

function decodeBody(part: Part): string {
  const enc = (part.headers['content-transfer-encoding'] ?? '7bit').toLowerCase()
  if (enc === 'base64') return Buffer.from(part.body.replace(/\s+/g, ''), 'base64').toString('utf8')
  if (enc === 'quoted-printable') {
    const soft = part.body.replace(/=\r?\n/g, '')
    const bytes: number[] = []
    for (let i = 0; i < soft.length; i++) {
      if (soft[i] === '=' && /^[0-9A-F]{2}$/i.test(soft.slice(i + 1, i + 3))) {
        bytes.push(parseInt(soft.slice(i + 1, i + 3), 16))
        i += 2
      } else bytes.push(...Buffer.from(soft[i]!, 'utf8'))
    }
    return Buffer.from(bytes).toString('utf8')
  }
  return part.body
}

function leaves(part: Part): Part[] {
  const type = part.headers['content-type'] ?? 'text/plain'
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1]
  if (!type.toLowerCase().startsWith('multipart/') || !boundary) return [part]
  const sections = part.body.split(`--${boundary}`).slice(1)
  const out: Part[] = []
  for (const s of sections) {
    if (s.startsWith('--')) break
    out.push(...leaves(splitHeaders(s.replace(/^\r?\n/, ''))))
  }
  return out
}

export function parseMessage(raw: string): Omit<ReceivedMail, 'to' | 'from'> {
  const top = splitHeaders(raw)
  let text = ''
  let html = ''
  for (const leaf of leaves(top)) {
    const type = (leaf.headers['content-type'] ?? 'text/plain').toLowerCase()
    if (type.startsWith('text/plain') && !text) text = decodeBody(leaf).replace(/\r\n/g, '\n')
    else if (type.startsWith('text/html') && !html) html = decodeBody(leaf)
  }
  return { subject: decodeWords(top.headers.subject ?? ''), text, html, raw, headers: top.headers }
}
