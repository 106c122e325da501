/** The mail module's front door: the sealed outbox, its dispatcher, the layout of a message and the transport. */
export { enqueueMail, MailDispatcher, type MailMessage } from './mail.outbox'
export { composeMail } from './mail.templates'
export { createMailTransport, type MailTransport } from './mail.transport'
