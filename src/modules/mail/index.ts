/** The mail module's front door: the sealed outbox, its dispatcher and the transport. */
export { enqueueMail, MailDispatcher } from './mail.outbox'
export { resetCodeMail, signupCodeMail, signupTakenMail } from './mail.templates'
export { createMailTransport, type MailTransport } from './mail.transport'
