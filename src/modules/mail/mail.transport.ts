import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { Config } from '../../config'
import type { Logger } from '../../platform/logger'

type OutgoingMail = { id: string; to: string; subject: string; text: string; html: string }

export interface MailTransport {
  send(mail: OutgoingMail): Promise<void>
}

/** SMTP through nodemailer when SMTP_URL is set; otherwise files in DATA_DIR/mail/ and a log line. */
export function createMailTransport(config: Config, log: Logger): MailTransport {
  if (config.smtpUrl) {
    const url = new URL(config.smtpUrl)
    const transport = nodemailer.createTransport({
      host: url.hostname,
      port: Number(url.port || (url.protocol === 'smtps:' ? 465 : 587)),
      secure: url.protocol === 'smtps:',
      auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
      // A plain smtp:// URL to localhost (tests, a local relay) needs no STARTTLS upgrade.
      ignoreTLS: url.protocol === 'smtp:' && url.searchParams.get('starttls') === 'false',
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    })
    return {
      async send(mail) {
        await transport.sendMail({
          from: config.mailFrom,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          messageId: `<${mail.id}@gpuhq>`,
        })
      },
    }
  }
  const dir = join(config.dataDir, 'mail')
  return {
    async send(mail) {
      mkdirSync(dir, { recursive: true })
      const file = join(dir, `${mail.id}.txt`)
      writeFileSync(file, `From: ${config.mailFrom}\nTo: ${mail.to}\nSubject: ${mail.subject}\n\n${mail.text}\n`, { mode: 0o600 })
      // The log says a mail was written, not what it says: it may hold a sign-in code.
      log.info('mail written to file (no SMTP_URL)', { mail_id: mail.id, file })
    },
  }
}
