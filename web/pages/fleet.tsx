import { useMemo, useState } from 'preact/hooks'
import { get } from '../lib/api'
import { ago, marketplaceName, num } from '../lib/format'
import { liveLabel, liveMode, useLive, VITALS_REFRESH_MS } from '../lib/live'
import { useInterval, useResource, useSnapshot } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { Dashboard, FleetReadiness, Group, Incident, Link, ServerReadinessSummary, ServerRow, Snapshot } from '../lib/api-types'
import { PresenceBadge } from '../ui/badges'
import { DrainBadge, useLiveDrains } from './drain'
import { Money, Price } from '../ui/money'
import { Page, Section } from '../ui/layout'
import { Async, DataTable, Empty, More } from '../ui/states'
import { Groups } from './groups'
import { ListingProfiles } from './listing-profiles'

/**
 * The fleet overview: the dashboard tiles, the servers with their presence as it changes (lib/live.ts),
 * filters by presence, group, tag, marketplace and name, and the groups.
 */

type Filters = { q: string; presence: string; group_id: string; tag: string; marketplace: string }
const NO_FILTERS: Filters = { q: '', presence: '', group_id: '', tag: '', marketplace: '' }

/** The alerts' marks (src/modules/notifications TEMPERATURE_MARKS, put in by the console's build). */
const HOT_C = __GPUHQ_HOT_C__
const COOL_C = __GPUHQ_COOL_C__

type Rental = 'rented' | 'idle' | null
/** What the page knows beside the rows: rentals from the links (until the row carries `rental_state`), open critical incidents. */
type Context = { rental: (s: ServerRow) => Rental; critical: (s: ServerRow) => Incident[]; readiness: (s: ServerRow) => ServerReadinessSummary | undefined }

const isHot = (s: ServerRow) => s.max_temp_core_c !== null && s.max_temp_core_c >= HOT_C
const rentedGpus = (s: ServerRow, ctx: Context) => s.rented_gpu_count ?? (ctx.rental(s) === 'rented' ? s.gpu_count : 0)

type Flag = { key: string; word: string; tone: 'ok' | 'warn' | 'bad' | 'info' | ''; title: string; href?: string }

/**
 * The row's flags, worst first: offline, hot (the alerts' mark), critical incidents, maintenance,
 * idle (listed, not rented), rented. docs/console.md "The fleet" says where each comes from.
 */
function flagsOf(s: ServerRow, ctx: Context): Flag[] {
  const out: Flag[] = []
  if (s.presence === 'offline' && !s.maintenance)
    out.push({ key: 'offline', word: 'offline', tone: 'bad', title: `No agent session since ${ago(s.last_seen_at)}` })
  if (isHot(s))
    out.push({
      key: 'hot',
      word: `hot ${num(s.max_temp_core_c, ' °C')}`,
      tone: 'bad',
      title: `A GPU reads ${num(s.max_temp_core_c, ' °C')}, at or above ${HOT_C} °C: the alerts open a critical incident until it reads below ${COOL_C} °C`,
    })
  const critical = ctx.critical(s)
  if (critical.length > 0)
    out.push({
      key: 'critical',
      word: `${critical.length} critical`,
      tone: 'bad',
      title: critical.map((i) => i.title).join('; '),
      href: '/alerts',
    })
  if (s.maintenance) out.push({ key: 'maintenance', word: 'maintenance', tone: 'info', title: s.maintenance.reason ?? 'In maintenance' })
  const rental = ctx.rental(s)
  if (rental === 'idle') out.push({ key: 'idle', word: 'idle', tone: 'warn', title: 'Listed on a marketplace, nothing rented' })
  if (rental === 'rented') {
    const n = rentedGpus(s, ctx)
    out.push({
      key: 'rented',
      word: n > 0 && n < s.gpu_count ? `rented ${n}/${s.gpu_count}` : 'rented',
      tone: 'ok',
      title: `${n} of ${s.gpu_count} GPUs rented`,
    })
  }
  return out
}

const RANK = ['offline', 'hot', 'critical', 'maintenance', 'idle', 'rented']
const stateRank = (s: ServerRow, ctx: Context) => {
  const flags = flagsOf(s, ctx)
  return flags.length === 0 ? RANK.length : RANK.indexOf(flags[0]!.key)
}

function FlagList({ flags }: { flags: Flag[] }) {
  return (
    <>
      {flags.map((f) =>
        f.href ? (
          <a key={f.key} class={`badge ${f.tone}`} href={href(f.href)} title={f.title} data-flag={f.key}>
            {f.word}
          </a>
        ) : (
          <span key={f.key} class={`badge ${f.tone}`} title={f.title} data-flag={f.key}>
            {f.word}
          </span>
        ),
      )}
    </>
  )
}

/** The top of the page: what a host looks at first (docs/console.md "The fleet"). */
function Cockpit({ d, rows, ctx }: { d: Dashboard; rows: ServerRow[]; ctx: Context }) {
  const offlineRows = rows.filter((s) => s.presence === 'offline')
  const up = rows.filter((s) => s.presence !== 'offline')
  const rented = d.gpus.rented ?? up.reduce((n, s) => n + rentedGpus(s, ctx), 0)
  const idle = d.gpus.idle ?? up.filter((s) => ctx.rental(s) === 'idle').reduce((n, s) => n + s.gpu_count, 0)
  const offline = d.gpus.offline ?? offlineRows.reduce((n, s) => n + s.gpu_count, 0)
  const hot = rows.filter(isHot)
  const attention = rows.filter((s) => flagsOf(s, ctx).some((f) => f.tone === 'bad'))
  return (
    <>
      <dl class="tiles cockpit" aria-label="Fleet at a glance">
        <div class="tile">
          <dt>Revenue today</dt>
          <dd data-testid="revenue-today">
            <Money usd={d.revenue_today_usd} />
          </dd>
        </div>
        <div class="tile">
          <dt>GPUs rented</dt>
          <dd data-testid="gpus-rented">
            {rented} <span class="muted small">of {d.gpus.total}</span>
          </dd>
        </div>
        <div class="tile">
          <dt>GPUs idle</dt>
          <dd data-testid="gpus-idle">{idle}</dd>
        </div>
        <div class={`tile${offline > 0 ? ' bad' : ''}`}>
          <dt>GPUs offline</dt>
          <dd data-testid="gpus-offline">{offline}</dd>
        </div>
        <div class={`tile${hot.length > 0 ? ' bad' : ''}`}>
          <dt>Hot servers</dt>
          <dd data-testid="hot-servers">{hot.length}</dd>
        </div>
        <div class="tile">
          <dt>Servers online</dt>
          <dd>
            {d.servers.online} <span class="muted small">of {d.servers.total}</span>
          </dd>
        </div>
      </dl>
      {attention.length > 0 && (
        <section class="attention" aria-labelledby="attention-h">
          <h2 id="attention-h">Needs attention</h2>
          <ul>
            {attention.map((s) => (
              <li key={s.id}>
                <a class="name" href={href(`/servers/${s.id}`)}>
                  {s.name}
                </a>{' '}
                <FlagList flags={flagsOf(s, ctx).filter((f) => f.tone === 'bad')} />
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  )
}

function FilterBar({ filters, set, groups }: { filters: Filters; set: (f: Filters) => void; groups: Group[] }) {
  const field = (key: keyof Filters) => ({ value: filters[key], id: `filter-${key}` })
  return (
    <form class="form inline" aria-label="Filter the servers" onSubmit={(e) => e.preventDefault()}>
      <div class="field">
        <label for="filter-q">Name or hostname</label>
        <input type="search" {...field('q')} onInput={(e) => set({ ...filters, q: e.currentTarget.value })} />
      </div>
      <div class="field">
        <label for="filter-presence">Presence</label>
        <select {...field('presence')} onChange={(e) => set({ ...filters, presence: e.currentTarget.value })}>
          <option value="">Any</option>
          <option value="online">Online</option>
          <option value="suspect">Suspect</option>
          <option value="offline">Offline</option>
        </select>
      </div>
      <div class="field">
        <label for="filter-group_id">Group</label>
        <select {...field('group_id')} onChange={(e) => set({ ...filters, group_id: e.currentTarget.value })}>
          <option value="">Any</option>
          {groups.map((g) => (
            <option key={g.id} value={g.id}>
              {g.name}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="filter-tag">Tag</label>
        <input type="text" placeholder="site or site:fra-1" {...field('tag')} onInput={(e) => set({ ...filters, tag: e.currentTarget.value.trim() })} />
      </div>
      <div class="field">
        <label for="filter-marketplace">Marketplace</label>
        <select {...field('marketplace')} onChange={(e) => set({ ...filters, marketplace: e.currentTarget.value })}>
          <option value="">Any</option>
          <option value="marketplace_a">Marketplace A</option>
          <option value="marketplace_b">Marketplace B</option>
        </select>
      </div>
      <button type="button" onClick={() => set(NO_FILTERS)}>
        Clear filters
      </button>
    </form>
  )
}

type SortKey = 'name' | 'state' | 'gpus' | 'temp' | 'util' | 'price' | 'revenue' | 'seen'
type Sort = { key: SortKey; desc: boolean }

const byNumber = (a: number | null, b: number | null) => (a === null ? (b === null ? 0 : 1) : b === null ? -1 : a - b)
/** Orders two decimal strings exactly (money never goes through a float here either). */
function byDecimal(a: string | null, b: string | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1
  const split = (v: string) => {
    const neg = v.startsWith('-')
    const [i = '0', f = ''] = v.replace(/^[+-]/, '').split('.')
    return { neg, i: i.replace(/^0+(?=\d)/, ''), f }
  }
  const x = split(a)
  const y = split(b)
  if (x.neg !== y.neg) return x.neg ? -1 : 1
  const width = Math.max(x.f.length, y.f.length)
  const digits = (d: { i: string; f: string }) => d.i.padStart(24, '0') + d.f.padEnd(width, '0')
  const c = digits(x) < digits(y) ? -1 : digits(x) > digits(y) ? 1 : 0
  return x.neg ? -c : c
}

function compare(key: SortKey, ctx: Context): (a: ServerRow, b: ServerRow) => number {
  switch (key) {
    case 'name':
      return (a, b) => a.name.localeCompare(b.name, undefined, { numeric: true })
    case 'state':
      return (a, b) => stateRank(a, ctx) - stateRank(b, ctx)
    case 'gpus':
      return (a, b) => a.gpu_count - b.gpu_count
    case 'temp':
      return (a, b) => byNumber(a.max_temp_core_c, b.max_temp_core_c)
    case 'util':
      return (a, b) => byDecimal(a.avg_util_pct, b.avg_util_pct)
    case 'price':
      return (a, b) => byDecimal(a.price_usd_gpu_h, b.price_usd_gpu_h)
    case 'revenue':
      return (a, b) => byDecimal(a.revenue_today_usd, b.revenue_today_usd)
    case 'seen':
      return (a, b) => byNumber(a.last_seen_at ? Date.parse(a.last_seen_at) : null, b.last_seen_at ? Date.parse(b.last_seen_at) : null)
  }
}

function sorted(rows: ServerRow[], sort: Sort, ctx: Context): ServerRow[] {
  const cmp = compare(sort.key, ctx)
  const byName = compare('name', ctx)
  return [...rows].sort((a, b) => (sort.desc ? -cmp(a, b) : cmp(a, b)) || byName(a, b))
}

/** A column header that sorts the table: a button inside, the order said by aria-sort. */
function SortHead({ label, k, sort, set, num: numeric }: { label: string; k: SortKey; sort: Sort; set: (s: Sort) => void; num?: boolean }) {
  const active = sort.key === k
  return (
    <th scope="col" class={numeric ? 'num' : undefined} aria-sort={active ? (sort.desc ? 'descending' : 'ascending') : undefined}>
      <button type="button" class="sort" onClick={() => set({ key: k, desc: active ? !sort.desc : k === 'revenue' || k === 'temp' })}>
        {label}
        <span aria-hidden="true" class="sort-mark">
          {active ? (sort.desc ? ' ▼' : ' ▲') : ''}
        </span>
      </button>
    </th>
  )
}

function ServerTable({ rows, groups, ctx }: { rows: ServerRow[]; groups: Group[]; ctx: Context }) {
  const [sort, setSort] = useState<Sort>({ key: 'name', desc: false })
  const drains = useLiveDrains()
  const groupName = (id: string | null) => groups.find((g) => g.id === id)?.name ?? '—'
  const head = (label: string, k: SortKey, numeric = false) => <SortHead label={label} k={k} sort={sort} set={setSort} num={numeric} />
  return (
    <DataTable
      label="Servers"
      head={
        <>
          {head('Server', 'name')}
          {head('State', 'state')}
          {head('GPUs', 'gpus')}
          <th scope="col">Group and tags</th>
          {head('Max temp', 'temp', true)}
          {head('Utilisation', 'util', true)}
          {head('Price / GPU-h', 'price', true)}
          {head('Revenue today', 'revenue', true)}
          {head('Last seen', 'seen')}
          <th scope="col">Readiness</th>
        </>
      }
    >
      {sorted(rows, sort, ctx).map((s) => {
        const flags = flagsOf(s, ctx)
        return (
          <tr key={s.id} data-server={s.id} data-state={flags.map((f) => f.key).join(' ') || 'unlisted'} class={flags[0] ? `row-${flags[0].tone}` : undefined}>
            <td>
              <a class="name" href={href(`/servers/${s.id}`)}>
                {s.name}
              </a>
              {s.marketplace && <div class="muted small">{marketplaceName(s.marketplace)}</div>}
            </td>
            <td>
              <div class="flags">
                <PresenceBadge presence={s.presence} />
                <FlagList flags={flags.filter((f) => f.key !== 'offline')} />
                <DrainBadge d={drains.get(s.id)} />
              </div>
            </td>
            <td>
              {s.gpu_count} × {s.gpu_model || '—'}
            </td>
            <td>
              {groupName(s.group_id)}
              {s.tags.length > 0 && (
                <ul class="tags" aria-label="Tags">
                  {s.tags.map((t) => (
                    <li key={t} class="badge">
                      {t}
                    </li>
                  ))}
                </ul>
              )}
            </td>
            <td class={`num${isHot(s) ? ' hot' : ''}`}>{num(s.max_temp_core_c, ' °C')}</td>
            <td class="num">{num(s.avg_util_pct, ' %')}</td>
            <td class="num">
              <Price usd={s.price_usd_gpu_h} />
            </td>
            <td class="num">
              <Money usd={s.revenue_today_usd} />
            </td>
            <td class="nowrap">{ago(s.last_seen_at)}</td>
            <td>
              <ReadinessCell r={ctx.readiness(s)} />
            </td>
          </tr>
        )
      })}
    </DataTable>
  )
}

const READY_TONE = { ready: 'ok', not_ready: 'bad', unknown: '' } as const
const READY_WORD = { ready: 'ready', not_ready: 'not ready', unknown: 'unknown' } as const

/**
 * The server's readiness against the marketplaces' bar (GET /readiness, docs/readiness.md): its
 * verdict, and when it is not ready the failing checks per marketplace, linking to the server page's section.
 */
function ReadinessCell({ r }: { r: ServerReadinessSummary | undefined }) {
  if (!r) return <span class="muted">—</span>
  const failing = r.marketplaces.filter((m) => m.failing.length > 0 && (m.linked || r.marketplaces.every((x) => !x.linked)))
  const why = failing.map((m) => `${marketplaceName(m.marketplace)}: ${m.failing.join(', ')}`).join('; ')
  const unknown = r.marketplaces.filter((m) => m.unknown.length > 0).map((m) => `${marketplaceName(m.marketplace)}: ${m.unknown.join(', ')} not known`)
  return (
    <a href={href(`/servers/${r.server_id}#readiness`)} data-readiness={r.status} title={why || unknown.join('; ') || 'Every required check passes'}>
      <span class={`badge ${READY_TONE[r.status]}`}>{READY_WORD[r.status]}</span>
      {why && <div class="muted small">{why}</div>}
    </a>
  )
}

/** Rentals from the marketplace links (listed, rentals running), for rows that do not say `rental_state` themselves. */
function useFleetContext(fleet: ServerRow[], version: number): Context {
  const links = useResource(() => get<{ links: Link[] }>('/marketplaces/links').catch(() => ({ links: [] as Link[] })), [version])
  const incidents = useResource(
    () => get<{ items: Incident[] }>('/alerts', { state: 'unresolved', limit: 200 }).catch(() => ({ items: [] as Incident[] })),
    [version],
  )
  const readiness = useResource(() => get<FleetReadiness>('/readiness').catch(() => null), [version])
  return useMemo(() => {
    const ready = new Map((readiness.data?.servers ?? []).map((r) => [r.server_id, r]))
    const rental = new Map<string, Rental>()
    for (const l of links.data?.links ?? []) {
      if (l.state !== 'linked') continue
      if ((l.remote.rentals_running ?? 0) > 0) rental.set(l.server_id, 'rented')
      else if (l.remote.listed && rental.get(l.server_id) !== 'rented') rental.set(l.server_id, 'idle')
    }
    const critical = new Map<string, Incident[]>()
    for (const i of incidents.data?.items ?? []) {
      if (i.severity !== 'critical' || !i.server_id) continue
      critical.set(i.server_id, [...(critical.get(i.server_id) ?? []), i])
    }
    return {
      rental: (s) => (s.rental_state !== undefined ? s.rental_state : (rental.get(s.id) ?? null)),
      critical: (s) => critical.get(s.id) ?? [],
      readiness: (s) => ready.get(s.id),
    }
  }, [links.data, incidents.data, readiness.data, fleet])
}

export function Fleet() {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS)
  const query = { ...filters, limit: 200 }
  const dashboard = useSnapshot<Dashboard>('/dashboard', {}, [])
  const servers = useSnapshot<Snapshot & { items: ServerRow[]; next_cursor: string | null }>('/servers', query, [JSON.stringify(filters)])
  // The whole fleet for the top of the page, whatever the filters hide from the table.
  const fleet = useSnapshot<Snapshot & { items: ServerRow[] }>('/servers', { limit: 200 }, [])
  const groups = useResource(() => get<{ items: Group[] }>('/groups'), [])
  const [version, setVersion] = useState(0)
  useLive((e) => {
    void dashboard.refresh()
    void servers.refresh()
    void fleet.refresh()
    if (e.type !== 'poll') setVersion((v) => v + 1)
  })
  useInterval(() => {
    void servers.refresh()
    void fleet.refresh()
    setVersion((v) => v + 1)
  }, VITALS_REFRESH_MS)
  const ctx = useFleetContext(fleet.data?.items ?? [], version)
  const filtered = Object.values(filters).some(Boolean)
  return (
    <Page
      title="Fleet"
      actions={
        can('operator') && (
          <a class="button primary" href={href('/add-server')}>
            Add a server
          </a>
        )
      }
    >
      <p class="live muted" role="status">
        {liveLabel(liveMode.value)}
      </p>
      <Async r={dashboard} label="Loading the fleet…">
        {(d) => <Cockpit d={d} rows={fleet.data?.items ?? []} ctx={ctx} />}
      </Async>
      <Section title="Servers">
        <FilterBar filters={filters} set={setFilters} groups={groups.data?.items ?? []} />
        <Async r={servers} label="Loading the servers…">
          {(page) =>
            page.items.length === 0 ? (
              <Empty>
                {filtered ? (
                  'No server matches these filters.'
                ) : (
                  <>
                    <p>No servers yet. Enrol the first one: install the agent with a one-time token.</p>
                    {can('operator') && <a href={href('/add-server')}>Add a server</a>}
                  </>
                )}
              </Empty>
            ) : (
              <>
                {page.stale && <p class="note">These figures are being refreshed ({page.stale_reason ?? 'stale snapshot'}).</p>}
                <ServerTable rows={page.items} groups={groups.data?.items ?? []} ctx={ctx} />
                <More
                  cursor={page.next_cursor}
                  load={async (cursor) => {
                    const next = await get<typeof page>('/servers', { ...query, cursor })
                    servers.set({ ...next, items: [...page.items, ...next.items] })
                  }}
                />
              </>
            )
          }
        </Async>
      </Section>
      <Groups groups={groups} counts={dashboard.data?.groups ?? []} />
      <ListingProfiles groups={groups} />
      {dashboard.data && dashboard.data.gpus.by_model.length > 0 && (
        <Section title="GPUs by model">
          <ul>
            {dashboard.data.gpus.by_model.map((m) => (
              <li key={m.model}>
                {m.model}: {m.count}
              </li>
            ))}
          </ul>
        </Section>
      )}
    </Page>
  )
}
