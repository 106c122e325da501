import { Type } from '@sinclair/typebox'
import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { etagOf } from '../../platform/etag'
import { NoContent, responses, IdParams } from '../../platform/schemas'
import { Group, GroupCreate, GroupPatch } from './groups.model'
import { createGroup, deleteGroup, getGroup, listGroups, updateGroup } from './groups.service'

const tags = ['groups']

export function groupsRoutes(deps: Deps) {
  return apiRoutes('groups', deps)
    .get('/groups', ({ verb }) => listGroups(verb), {
      response: responses({ 200: Type.Object({ items: Type.Array(Group) }) }, [401, 403]),
      detail: describe(
        { role: 'viewer', scope: 'servers:read', reach: 'tenant' },
        { tags, summary: 'List server groups', description: 'Ordered by position, then name.' },
      ),
    })
    .post(
      '/groups',
      async ({ verb, body, set }) => {
        const g = await createGroup({ ...verb, input: body })
        set.status = 201
        set.headers.etag = etagOf(g.version)
        set.headers.location = `${API_PREFIX}/groups/${g.id}`
        return g
      },
      {
        body: GroupCreate,
        response: responses({ 201: Group }, [401, 403, 409, 413, 415, 422]),
        detail: describe(
          { role: 'operator', scope: 'servers:write', reach: 'tenant' },
          { tags, summary: 'Create a server group', description: 'Names are unique within the tenant (409 conflict).' },
        ),
      },
    )
    .get(
      '/groups/:id',
      async ({ verb, params, set }) => {
        const g = await getGroup({ ...verb, id: params.id })
        set.headers.etag = etagOf(g.version)
        return g
      },
      {
        params: IdParams,
        response: responses({ 200: Group }, [401, 403, 404, 422]),
        detail: describe({ role: 'viewer', scope: 'servers:read', reach: 'tenant' }, { tags, summary: 'Group detail' }),
      },
    )
    .patch(
      '/groups/:id',
      async ({ verb, request, params, body, set }) => {
        const g = await updateGroup({
          ...verb,
          id: params.id,
          ifMatch: request.headers.get('if-match'),
          input: body,
        })
        set.headers.etag = etagOf(g.version)
        return g
      },
      {
        params: IdParams,
        body: GroupPatch,
        response: responses({ 200: Group }, [401, 403, 404, 409, 412, 413, 415, 422]),
        detail: describe(
          { role: 'operator', scope: 'servers:write', reach: 'tenant' },
          { tags, summary: 'Rename or reorder a group', description: 'If-Match optional; 412 when stale.' },
        ),
      },
    )
    .delete(
      '/groups/:id',
      async ({ verb, params, set }) => {
        await deleteGroup({ ...verb, id: params.id })
        set.status = 204
        return null
      },
      {
        params: IdParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 409, 422]),
        detail: describe(
          { role: 'operator', scope: 'servers:write', reach: 'tenant' },
          { tags, summary: 'Delete an empty group', description: '409 conflict while managed servers are in it.' },
        ),
      },
    )
}
