import { composeMail, type MailMessage } from '../mail'
import { CODE_TTL_SECONDS } from './codes.service'

/** The account emails. A code mail is worth sending only while its code works: the outbox drops it after that. */
const CODE_MINUTES = CODE_TTL_SECONDS / 60

export function signupCodeMail(to: string, code: string, publicUrl: string): MailMessage {
  return composeMail(
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
  return composeMail(to, 'signup_taken', 'You already have a gpuhq account', [
    'Someone (probably you) tried to sign up for gpuhq with this email address, but you already have an account.',
    `Sign in at ${publicUrl}, or reset your password there if you forgot it.`,
    'If it was not you, you can ignore this email; nothing changed.',
  ])
}

export function resetCodeMail(to: string, code: string, publicUrl: string): MailMessage {
  return composeMail(
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
