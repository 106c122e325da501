/** The audit module's front door: the one audit writer, the request's audit context and the /audit route. */
export type { AuditContext } from '../../platform/audit-context'
export { recordAudit, recordMemberEvent, recordRequestAudit, recordSystemEvent } from './audit.service'
export { auditRoutes } from './audit.routes'
