import type { Static } from '@sinclair/typebox'
import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { formatMoney, parseMoney } from '../../platform/money'
import { DEFAULT_PAGE_SIZE, paginateInMemory } from '../../platform/cursor'
import type { FleetRow } from './fleet.row'
import type { SnapshotHead } from './fleet.repository'
import type { ServerListQuery } from './servers.model'
import { envelope, readSnapshot, snapshotTag } from './snapshot.service'

/**
 * GET /servers and GET /dashboard, both read from the tenant's fleet snapshot (`head`: its head as
 * the request's count read it, readSnapshot). Each answers its strong tag first and builds the
 * body only when asked, so a matching If-None-Match costs no filtering.
 */
type ListQuery = Static<typeof ServerListQuery>
type ServerFilters = Omit<ListQuery, 'cursor' | 'limit'>
type Tagged<T> = { etag: string; body: () => T }

/** Applies the GET /servers filters to snapshot rows (and a token's server allowlist). */
function filterRows(rows: FleetRow[], actor: Actor, f: ServerFilters): FleetRow[] {
  const q = f.q?.toLowerCase()
  return rows.filter(
    (r) =>
      mayAccessServer(actor, r.id) &&
      (!f.presence || r.presence === f.presence) &&
      (!f.fsm_state || r.fsm_state === f.fsm_state) &&
      (!f.marketplace || r.marketplace === f.marketplace) &&
      (!f.health || r.health === f.health) &&
      (!f.rental_state || (r.rental_state ?? 'none') === f.rental_state) &&
      (!f.group_id || r.group_id === f.group_id.toLowerCase()) &&
      (!f.tag || r.tags.some((t) => t === f.tag || (!f.tag!.includes(':') && t.startsWith(`${f.tag}:`)))) &&
      (!q || r.name.toLowerCase().includes(q) || (r._hostname ?? '').toLowerCase().includes(q)),
  )
}

/** The fleet, one row per managed server, ordered by name, a page at a time. */
export async function listServers({ deps, actor, input, head }: { deps: Deps; actor: Actor; input: ListQuery; head?: SnapshotHead | null }) {
  const snap = await readSnapshot(deps, actor.tenantId, head)
  const { cursor, limit = DEFAULT_PAGE_SIZE, ...filters } = input
  const etag = snapshotTag(snap, JSON.stringify({ filters, cursor, limit, allow: actor.serverAllowlist }))
  const body = () => {
    const rows = filterRows(snap.rows, actor, filters)
    const page = paginateInMemory(deps.keys.cursor, {
      scope: `servers:${actor.tenantId}:${JSON.stringify(filters)}`,
      input: { cursor, limit },
      fetch: (after: { name: string; id: string } | undefined, take) => {
        const start = after ? rows.findIndex((r) => r.name > after.name || (r.name === after.name && r.id > after.id)) : 0
        return start < 0 ? [] : rows.slice(start, start + take)
      },
      position: (r) => ({ name: r.name, id: r.id }),
      view: ({ _hostname, ...row }) => row,
    })
    return { ...envelope(snap), ...page }
  }
  return { etag, body } satisfies Tagged<unknown>
}

/**
 * Counts by presence, maintenance, rental state and health, GPUs by model and by what they do now,
 * servers per group, and today's revenue: every figure a sum over the same rows GET /servers
 * answers (docs/fleet.md "Dashboard").
 */
export async function fleetDashboard({ deps, actor, head }: { deps: Deps; actor: Actor; head?: SnapshotHead | null }) {
  const snap = await readSnapshot(deps, actor.tenantId, head)
  const etag = snapshotTag(snap, `dashboard:${JSON.stringify(actor.serverAllowlist)}`)
  const body = () => {
    const rows = filterRows(snap.rows, actor, {})
    const count = (p: string) => rows.filter((r) => r.presence === p).length
    const models = new Map<string, number>()
    for (const r of rows) if (r.gpu_model) models.set(r.gpu_model, (models.get(r.gpu_model) ?? 0) + r.gpu_count)
    const groups = new Map<string | null, number>()
    for (const r of rows) groups.set(r.group_id, (groups.get(r.group_id) ?? 0) + 1)
    const gpus = { rented: 0, idle: 0, unlisted: 0, offline: 0 }
    for (const r of rows) {
      if (r.presence === 'offline') gpus.offline += r.gpu_count
      else {
        gpus.rented += r.rented_gpu_count
        if (r.rental_state === null) gpus.unlisted += r.gpu_count - r.rented_gpu_count
        else gpus.idle += r.gpu_count - r.rented_gpu_count
      }
    }
    const health = (h: string) => rows.filter((r) => r.health === h).length
    return {
      ...envelope(snap),
      servers: {
        total: rows.length,
        online: count('online'),
        suspect: count('suspect'),
        offline: count('offline'),
        in_maintenance: rows.filter((r) => 'maintenance' in r).length,
        rented: rows.filter((r) => r.rental_state === 'rented').length,
        idle: rows.filter((r) => r.rental_state === 'idle').length,
        health: { ok: health('ok'), warning: health('warning'), critical: health('critical') },
      },
      gpus: {
        total: rows.reduce((a, r) => a + r.gpu_count, 0),
        ...gpus,
        by_model: [...models].sort((a, b) => b[1] - a[1]).map(([model, c]) => ({ model, count: c })),
      },
      groups: [...groups].map(([group_id, n]) => ({ group_id, servers: n })),
      revenue_today_usd: formatMoney(rows.reduce((a, r) => a + parseMoney(r.revenue_today_usd), 0)),
    }
  }
  return { etag, body } satisfies Tagged<unknown>
}
