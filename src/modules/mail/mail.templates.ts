import type { MailMessage } from './mail.outbox'
import { CODE_TTL_SECONDS } from '../accounts/codes.service'

/**
 * The account emails. Each has a plain-text and an HTML body; a code stands alone on its own line
 * so a mail client (or a test) can pick it out.
 */
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

/** A code mail is worth sending only while its code works: the outbox drops it after that. */
const CODE_MINUTES = CODE_TTL_SECONDS / 60

function message(to: string, template: string, subject: string, lines: string[], validForSeconds?: number): MailMessage {
  const text = lines.join('\n') + '\n'
  const html =
    '<!doctype html><html><body style="font-family:system-ui,sans-serif">' +
    lines.map((l) => (/^\d{6}$/.test(l) ? `<p style="font-size:28px;letter-spacing:4px"><b>${l}</b></p>` : `<p>${esc(l)}</p>`)).join('') +
    '</body></html>'
  return { to, template, subject, text, html, ...(validForSeconds === undefined ? {} : { validForSeconds }) }
}

export function signupCodeMail(to: string, code: string, publicUrl: string): MailMessage {
  return message(
    to,
    'signup_code',
    `Your gpuhq sign-up code: ${code}`,
    [
      'Enter this code to confirm your email address and create your gpuhq account:',
      code,
      `It is valid for ${CODE_MINUTES} minutes. If you did not ask for it, ignore this email.`,
      publicUrl,
    ],
    CODE_TTL_SECONDS,
  )
}

export function signupTakenMail(to: string, publicUrl: string): MailMessage {
  return message(to, 'signup_taken', 'You already have a gpuhq account', [
    'Someone (probably you) tried to sign up for gpuhq with this email address, but you already have an account.',
    `Sign in at ${publicUrl}, or reset your password there if you forgot it.`,
    'If it was not you, you can ignore this email; nothing changed.',
  ])
}

export function resetCodeMail(to: string, code: string, publicUrl: string): MailMessage {
  return message(
    to,
    'reset_code',
    `Your gpuhq password reset code: ${code}`,
    [
      'Enter this code to choose a new password for your gpuhq account:',
      code,
      `It is valid for ${CODE_MINUTES} minutes. If you did not ask for it, ignore this email; your password stays as it is.`,
      publicUrl,
    ],
    CODE_TTL_SECONDS,
  )
}
