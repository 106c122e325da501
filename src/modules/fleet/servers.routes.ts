import { Elysia, t } from 'elysia'
import { actorOf, describe, type AccessSpec } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { decodeCursor, encodeCursor } from '../../platform/cursor'
import { etagOf, ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { NoContent, PageQuery, responses } from '../../platform/schemas'
import { auditContextOf } from '../audit/audit.context'
import { Dashboard, KeepOn, Maintenance, MaintenanceBody, ServerDetail, ServerEventPage, ServerList, ServerPatch } from './servers.model'
import {
  declareMaintenance,
  decommissionServer,
  endMaintenance,
  filterRows,
  listServerEvents,
  loadServer,
  serverDetail,
  setKeepOn,
  updateServerConfig,
} from './servers.service'
import { envelope, readSnapshot, snapshotTag } from './snapshot.service'
import { agentSessions } from '../agent/agent.ws'
import { dispatchServer } from '../commands/commands.delivery'

const tags = ['servers']
const read: AccessSpec = { role: 'viewer', scope: 'servers:read', serverParam: 'id' }
const write: AccessSpec = { role: 'operator', scope: 'servers:write', serverParam: 'id' }
const Id = t.Object({ id: t.String({ format: 'uuid' }) })
const IdMarketplace = t.Object({ id: t.String({ format: 'uuid' }), marketplace: t.Union([t.Literal('marketplace_a'), t.Literal('marketplace_b')]) })

export function serversRoutes(deps: Deps) {
  return new Elysia({ name: 'servers', prefix: '/api/v1' })
    .get(
      '/servers',
      ({ request, query, set }) => {
        const actor = actorOf(request)
        const snap = readSnapshot(deps, actor.tenantId)
        const { cursor, limit = 50, ...filters } = query
        const selector = JSON.stringify({ filters, cursor, limit, allow: actor.serverAllowlist })
        const tag = snapshotTag(snap, selector)
        if (ifNoneMatchHits(request.headers.get('if-none-match'), tag)) return notModified(tag, requestState(request).id)
        const rows = filterRows(snap.rows, actor, filters)
        const scope = `servers:${actor.tenantId}:${JSON.stringify(filters)}`
        const after = cursor ? decodeCursor<{ name: string; id: string }>(deps.keys.cursor, scope, cursor) : null
        const start = after ? rows.findIndex((r) => r.name > after.name || (r.name === after.name && r.id > after.id)) : 0
        const page = start < 0 ? [] : rows.slice(start, start + limit)
        const more = start >= 0 && start + limit < rows.length
        set.headers.etag = tag
        return {
          ...envelope(snap),
          items: page.map(({ _hostname, ...row }) => row),
          next_cursor: more ? encodeCursor(deps.keys.cursor, scope, { name: page[page.length - 1]!.name, id: page[page.length - 1]!.id }) : null,
        }
      },
      {
        query: t.Object({
          ...PageQuery,
          presence: t.Optional(t.Union([t.Literal('online'), t.Literal('suspect'), t.Literal('offline')])),
          fsm_state: t.Optional(t.String({ maxLength: 64 })),
          marketplace: t.Optional(t.String({ maxLength: 64 })),
          group_id: t.Optional(t.String({ format: 'uuid' })),
          tag: t.Optional(t.String({ maxLength: 128, description: 'Exact match of a tag key (matching key and key:value) or of key:value' })),
          q: t.Optional(t.String({ maxLength: 128, description: 'Substring of the server name or hostname, case-insensitive' })),
        }),
        response: responses({ 200: ServerList }, [304, 401, 403, 422]),
        detail: describe(
          { role: 'viewer', scope: 'servers:read' },
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
      ({ request, set }) => {
        const actor = actorOf(request)
        const snap = readSnapshot(deps, actor.tenantId)
        const tag = snapshotTag(snap, `dashboard:${JSON.stringify(actor.serverAllowlist)}`)
        if (ifNoneMatchHits(request.headers.get('if-none-match'), tag)) return notModified(tag, requestState(request).id)
        const rows = filterRows(snap.rows, actor, {})
        const count = (p: string) => rows.filter((r) => r.presence === p).length
        const models = new Map<string, number>()
        for (const r of rows) if (r.gpu_model) models.set(r.gpu_model, (models.get(r.gpu_model) ?? 0) + r.gpu_count)
        const groups = new Map<string | null, number>()
        for (const r of rows) groups.set(r.group_id, (groups.get(r.group_id) ?? 0) + 1)
        set.headers.etag = tag
        return {
          ...envelope(snap),
          servers: {
            total: rows.length,
            online: count('online'),
            suspect: count('suspect'),
            offline: count('offline'),
            in_maintenance: rows.filter((r) => 'maintenance' in r).length,
          },
          gpus: {
            total: rows.reduce((a, r) => a + r.gpu_count, 0),
            by_model: [...models].sort((a, b) => b[1] - a[1]).map(([model, c]) => ({ model, count: c })),
          },
          groups: [...groups].map(([group_id, n]) => ({ group_id, servers: n })),
          revenue_today_usd: '0.00',
        }
      },
      {
        response: responses({ 200: Dashboard }, [304, 401, 403]),
        detail: describe(
          { role: 'viewer', scope: 'servers:read' },
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
      ({ request, params, set }) => {
        const server = loadServer(deps, actorOf(request), params.id)
        const tag = etagOf(server.version)
        if (ifNoneMatchHits(request.headers.get('if-none-match'), tag)) return notModified(tag, requestState(request).id)
        set.headers.etag = tag
        return serverDetail(deps, server)
      },
      {
        params: Id,
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
      ({ request, params, body, set }) => {
        const out = updateServerConfig({
          deps,
          actor: actorOf(request),
          audit: auditContextOf(request),
          id: params.id,
          ifMatch: request.headers.get('if-match'),
          input: body,
        })
        set.headers.etag = etagOf(out.version)
        // A rental that ended may release commands waiting for it.
        if (body.rental_active === false) dispatchServer(deps, out.id)
        return out
      },
      {
        params: Id,
        body: ServerPatch,
        response: responses({ 200: ServerDetail }, [401, 403, 404, 409, 412, 413, 415, 422]),
        detail: describe(write, {
          tags,
          summary: "Update a server's configuration",
          description: 'Any of name, group_id, tags (key or key:value, at most 64), electricity_usd_per_kwh. If-Match optional; 412 when stale.',
        }),
      },
    )
    .post(
      '/servers/:id/decommission',
      ({ request, params }) => {
        const out = decommissionServer({ deps, actor: actorOf(request), audit: auditContextOf(request), id: params.id })
        agentSessions(deps).close(out.id, 4410, 'server decommissioned')
        return out
      },
      {
        params: Id,
        response: responses({ 200: ServerDetail }, [401, 403, 404, 422]),
        detail: describe(write, {
          tags,
          summary: 'Decommission a server',
          description: 'Revokes the agent credential (its session is closed), stops billing, keeps history. Repeating it changes nothing.',
        }),
      },
    )
    .put(
      '/servers/:id/keep-on/:marketplace',
      ({ request, params }) =>
        setKeepOn({ deps, actor: actorOf(request), audit: auditContextOf(request), id: params.id, marketplace: params.marketplace, on: true }),
      {
        params: IdMarketplace,
        response: responses({ 200: KeepOn }, [401, 403, 404, 409, 422]),
        detail: describe(write, { tags, summary: 'Keep the server on a rental platform' }),
      },
    )
    .delete(
      '/servers/:id/keep-on/:marketplace',
      ({ request, params }) =>
        setKeepOn({ deps, actor: actorOf(request), audit: auditContextOf(request), id: params.id, marketplace: params.marketplace, on: false }),
      {
        params: IdMarketplace,
        response: responses({ 200: KeepOn }, [401, 403, 404, 422]),
        detail: describe(write, { tags, summary: 'Stop keeping the server on a rental platform' }),
      },
    )
    .put(
      '/servers/:id/maintenance',
      ({ request, params, body }) =>
        declareMaintenance({ deps, actor: actorOf(request), audit: auditContextOf(request), id: params.id, reason: body?.reason ?? null }),
      {
        params: Id,
        body: t.Optional(MaintenanceBody),
        response: responses({ 200: Maintenance }, [401, 403, 404, 409, 413, 415, 422]),
        detail: describe(write, { tags, summary: 'Declare maintenance', description: 'Repeating the declaration keeps `since` (the reason is updated).' }),
      },
    )
    .delete(
      '/servers/:id/maintenance',
      ({ request, params, set }) => {
        endMaintenance({ deps, actor: actorOf(request), audit: auditContextOf(request), id: params.id })
        set.status = 204
        return null
      },
      {
        params: Id,
        response: responses({ 204: NoContent }, [401, 403, 404, 422]),
        detail: describe(write, { tags, summary: 'Take the server back into service' }),
      },
    )
    .get('/servers/:id/events', ({ request, params, query }) => listServerEvents({ deps, actor: actorOf(request), id: params.id, input: query }), {
      params: Id,
      query: t.Object({ ...PageQuery, kind: t.Optional(t.String({ maxLength: 64 })) }),
      response: responses({ 200: ServerEventPage }, [401, 403, 404, 422]),
      detail: describe(read, {
        tags,
        summary: 'Typed durable events of a server',
        description:
          'Newest first: presence.online/suspect/offline, agent.enrolled, maintenance.declared/ended, server.updated, server.decommissioned, and agent.<kind> for what the agent reports.',
      }),
    })
}
