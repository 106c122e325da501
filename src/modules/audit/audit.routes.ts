import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { responses } from '../../platform/schemas'
import { AuditPage, AuditQuery } from './audit.model'
import { listAuditEntries } from './audit.service'

export function auditRoutes(deps: Deps) {
  return apiRoutes('audit', deps).get('/audit', ({ verb, query }) => listAuditEntries({ ...verb, input: query }), {
    query: AuditQuery,
    response: responses({ 200: AuditPage }, [401, 403, 422]),
    detail: describe(
      { role: 'admin', scope: 'audit:read', reach: 'tenant' },
      {
        tags: ['audit'],
        summary: 'Who used the account',
        description: 'Newest first. Sign-ins, token mint and revoke and every write operation appear, refused ones with outcome denied.',
      },
    ),
  })
}
