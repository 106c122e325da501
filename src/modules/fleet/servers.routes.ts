import { t } from 'elysia'
import { describe, type AccessSpec } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import { rodeSnapshotHead, snapshotHeadRidesOn } from './snapshot.service'
import { perDeps, type Deps } from '../../platform/context'
import { AnswerCache, jsonAnswer, responseCheck } from '../../platform/answer-cache'
import { etagOf, ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { NoContent, responses, IdParams } from '../../platform/schemas'
import {
  Dashboard,
  KeepOn,
  MaintenanceBody,
  MaintenanceDeclared,
  ServerDetail,
  ServerEventPage,
  ServerEventsQuery,
  ServerList,
  ServerListQuery,
  ServerPatch,
} from './servers.model'
import { fleetDashboard, listServers } from './servers.list'
import {
  declareMaintenance,
  decommissionServer,
  endMaintenance,
  getServer,
  listServerEvents,
  setKeepOn,
  updateServerConfig,
  type GroupLookup,
  type MaintenanceAnnouncements,
  type MarginLookup,
} from './servers.service'
import { MarketplaceId } from '../../platform/marketplace-id'

const tags = ['servers']
const read: AccessSpec = { role: 'viewer', scope: 'servers:read', reach: 'server', serverParam: 'id' }
const write: AccessSpec = { role: 'operator', scope: 'servers:write', reach: 'server', serverParam: 'id' }
const IdMarketplace = t.Object({ id: t.String({ format: 'uuid' }), marketplace: MarketplaceId })

// Both lists read the snapshot's head first: on PostgreSQL it comes with the request's count.
snapshotHeadRidesOn(`${API_PREFIX}/servers`)
snapshotHeadRidesOn(`${API_PREFIX}/dashboard`)

/** Built pages of the fleet snapshot, by tenant and strong tag (src/platform/answer-cache.ts). */
const answers = perDeps(() => new AnswerCache())
const checkServerList = responseCheck(ServerList)
const checkDashboard = responseCheck(Dashboard)

/**
 * `groups` finds a group of the tenant (the groups module's); `announcements` lists the linked
 * platforms a maintenance declaration could be announced on (the marketplaces module's); `margin`
 * is a server's recent margin (the costs module's). All are handed in by the composition root.
 */
export function serversRoutes(deps: Deps, groups: GroupLookup, announcements: MaintenanceAnnouncements, margin: MarginLookup) {
  return apiRoutes('servers', deps)
    .get(
      '/servers',
      async ({ verb, request, query }) => {
        const { actor } = verb
        const out = await listServers({ deps, actor, input: query, head: rodeSnapshotHead(request, actor.tenantId) })
        if (ifNoneMatchHits(request.headers.get('if-none-match'), out.etag)) return notModified(out.etag, requestState(request).id) as never
        return jsonAnswer(answers(deps).json(`servers\n${actor.tenantId}\n${out.etag}`, out.body, checkServerList), out.etag)
      },
      {
        query: ServerListQuery,
        response: responses({ 200: ServerList }, [304, 401, 403, 422]),
        detail: describe(
          { role: 'viewer', scope: 'servers:read', reach: 'server' },
          {
            tags,
            summary: 'The fleet: one row per managed server',
            description:
              'A consistent snapshot, refreshed every 60 s (and at once after a change through the API or a presence transition); older snapshots are served with stale=true while a refresh runs. Rows are ordered by name. ETag / If-None-Match → 304.',
          },
        ),
      },
    )
    .get(
      '/dashboard',
      async ({ verb, request }) => {
        const { actor } = verb
        const out = await fleetDashboard({ deps, actor, head: rodeSnapshotHead(request, actor.tenantId) })
        if (ifNoneMatchHits(request.headers.get('if-none-match'), out.etag)) return notModified(out.etag, requestState(request).id) as never
        return jsonAnswer(answers(deps).json(`dashboard\n${actor.tenantId}\n${out.etag}`, out.body, checkDashboard), out.etag)
      },
      {
        response: responses({ 200: Dashboard }, [304, 401, 403]),
        detail: describe(
          { role: 'viewer', scope: 'servers:read', reach: 'server' },
          {
            tags,
            summary: 'Versioned fleet dashboard snapshot',
            description:
              'Counts by presence, maintenance, GPUs by model and servers per group, from the same snapshot as GET /servers. ETag / If-None-Match → 304.',
          },
        ),
      },
    )
    .get(
      '/servers/:id',
      async ({ verb, request, params, set }) => {
        const out = await getServer({ ...verb, id: params.id, margin })
        if (ifNoneMatchHits(request.headers.get('if-none-match'), out.etag)) return notModified(out.etag, requestState(request).id) as never
        set.headers.etag = out.etag
        return out.body()
      },
      {
        params: IdParams,
        response: responses({ 200: ServerDetail }, [304, 401, 403, 404, 422]),
        detail: describe(read, {
          tags,
          summary: 'Server detail with the latest telemetry per GPU and host',
          description: "ETag is the server's configuration version.",
        }),
      },
    )
    .patch(
      '/servers/:id',
      async ({ verb, request, params, body, set }) => {
        const out = await updateServerConfig({
          ...verb,
          id: params.id,
          ifMatch: request.headers.get('if-match'),
          input: body,
          groups,
        })
        set.headers.etag = etagOf(out.version)
        return out
      },
      {
        params: IdParams,
        body: ServerPatch,
        response: responses({ 200: ServerDetail }, [401, 403, 404, 409, 412, 413, 415, 422]),
        detail: describe(write, {
          tags,
          summary: "Update a server's configuration",
          description: 'Any of name, group_id, tags (key or key:value, at most 64), electricity_usd_per_kwh. If-Match optional; 412 when stale.',
        }),
      },
    )
    .post('/servers/:id/decommission', ({ verb, params }) => decommissionServer({ ...verb, id: params.id }), {
      params: IdParams,
      response: responses({ 200: ServerDetail }, [401, 403, 404, 422]),
      detail: describe(write, {
        tags,
        summary: 'Decommission a server',
        description: 'Revokes the agent credential (its session is closed), stops billing, keeps history. Repeating it changes nothing.',
      }),
    })
    .put('/servers/:id/keep-on/:marketplace', ({ verb, params }) => setKeepOn({ ...verb, id: params.id, marketplace: params.marketplace, on: true }), {
      params: IdMarketplace,
      response: responses({ 200: KeepOn }, [401, 403, 404, 409, 422]),
      detail: describe(write, { tags, summary: 'Keep the server on a rental platform' }),
    })
    .delete('/servers/:id/keep-on/:marketplace', ({ verb, params }) => setKeepOn({ ...verb, id: params.id, marketplace: params.marketplace, on: false }), {
      params: IdMarketplace,
      response: responses({ 200: KeepOn }, [401, 403, 404, 422]),
      detail: describe(write, { tags, summary: 'Stop keeping the server on a rental platform' }),
    })
    .put('/servers/:id/maintenance', ({ verb, params, body }) => declareMaintenance({ ...verb, id: params.id, reason: body?.reason ?? null, announcements }), {
      params: IdParams,
      body: t.Optional(MaintenanceBody),
      response: responses({ 200: MaintenanceDeclared }, [401, 403, 404, 409, 413, 415, 422]),
      detail: describe(write, {
        tags,
        summary: 'Declare maintenance',
        description:
          'Repeating the declaration keeps `since` (the reason is updated). Nothing is announced to renters by itself: `announce_on` lists each marketplace the server is linked to, whether it has a maintenance API, and the request that announces the window there (marketplace_b has none: withdraw the offer instead).',
      }),
    })
    .delete(
      '/servers/:id/maintenance',
      async ({ verb, params, set }) => {
        await endMaintenance({ ...verb, id: params.id })
        set.status = 204
        return null
      },
      {
        params: IdParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 422]),
        detail: describe(write, { tags, summary: 'Take the server back into service' }),
      },
    )
    .get('/servers/:id/events', ({ verb, params, query }) => listServerEvents({ ...verb, id: params.id, input: query }), {
      params: IdParams,
      query: ServerEventsQuery,
      response: responses({ 200: ServerEventPage }, [401, 403, 404, 422]),
      detail: describe(read, {
        tags,
        summary: 'Typed durable events of a server',
        description:
          'Newest first: presence.online/suspect/offline, agent.enrolled, maintenance.declared/ended, server.updated, server.decommissioned, watchdog.* for what a watchdog rule did (docs/watchdog.md), and agent.<kind> for what the agent reports.',
      }),
    })
}
