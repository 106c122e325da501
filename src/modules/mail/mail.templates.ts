import type { MailMessage } from './mail.outbox'

/**
 * How every email is laid out: a plain-text and an HTML body from the same lines; a 6-digit code
 * stands alone on its own line so a mail client (or a test) can pick it out. The words of each
 * message belong to the module that sends it (accounts/accounts.mail.ts).
 */
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

export function composeMail(to: string, template: string, subject: string, lines: string[], validForSeconds?: number): MailMessage {
  const text = `${lines.join('\n')}\n`
  const html =
    '<!doctype html><html><body style="font-family:system-ui,sans-serif">' +
    lines.map((l) => (/^\d{6}$/.test(l) ? `<p style="font-size:28px;letter-spacing:4px"><b>${l}</b></p>` : `<p>${esc(l)}</p>`)).join('') +
    '</body></html>'
  return { to, template, subject, text, html, ...(validForSeconds === undefined ? {} : { validForSeconds }) }
}
