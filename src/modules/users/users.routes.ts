import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { responses } from '../../platform/schemas'
import { Me, MePatch, MemberPage, MemberQuery } from './users.model'
import { getMe, listMembers, updateMe } from './users.service'

const tags = ['users']

export function usersRoutes(deps: Deps) {
  return apiRoutes('users', deps)
    .get('/me', ({ verb }) => getMe(verb), {
      response: responses({ 200: Me }, [401]),
      detail: describe(
        { role: 'viewer', anyToken: true, reach: 'none' },
        { tags, summary: 'Current user profile', description: 'Any valid token may read it: it shows only the caller.' },
      ),
    })
    .patch('/me', ({ verb, body }) => updateMe({ ...verb, input: body }), {
      body: MePatch,
      response: responses({ 200: Me }, [401, 403, 413, 415, 422]),
      detail: describe(
        { role: 'viewer', cookieOnly: true, reach: 'none' },
        {
          tags,
          summary: 'Update profile preferences',
          description:
            'Any of `timezone` (IANA zone name, else 422 unknown_time_zone), `locale` (BCP 47 tag, stored canonicalised) and `display_name` (null clears it).',
        },
      ),
    })
    .get('/users', ({ verb, query }) => listMembers({ ...verb, input: query }), {
      query: MemberQuery,
      response: responses({ 200: MemberPage }, [401, 403, 422]),
      detail: describe(
        { role: 'viewer', scope: 'audit:read', reach: 'tenant' },
        {
          tags,
          summary: 'Members of the tenant with their roles',
          description: 'Who can reach the account is audit data: a token needs `audit:read` (owners and admins only); every member can read it in the browser.',
        },
      ),
    })
}
