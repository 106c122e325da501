import { useState } from 'preact/hooks'
import { get } from '../lib/api'
import { ago, money, num } from '../lib/format'
import { liveLabel, liveMode, useLive, VITALS_REFRESH_MS } from '../lib/live'
import { useInterval, useResource, useSnapshot } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { Dashboard, Group, ServerRow, Snapshot } from '../lib/types'
import { PresenceBadge } from '../ui/badges'
import { Money, Price } from '../ui/money'
import { Page, Section } from '../ui/layout'
import { Async, DataTable, Empty, More } from '../ui/states'
import { Groups } from './groups'

/**
 * The fleet overview: the dashboard tiles, the servers with their presence as it changes (lib/live.ts),
 * filters by presence, group, tag, marketplace and name, and the groups.
 */

type Filters = { q: string; presence: string; group_id: string; tag: string; marketplace: string }
const NO_FILTERS: Filters = { q: '', presence: '', group_id: '', tag: '', marketplace: '' }

function Tiles({ d }: { d: Dashboard }) {
  const tiles: [string, string | number][] = [
    ['Servers', d.servers.total],
    ['Online', d.servers.online],
    ['Suspect', d.servers.suspect],
    ['Offline', d.servers.offline],
    ['In maintenance', d.servers.in_maintenance],
    ['GPUs', d.gpus.total],
    ['Revenue today', money(d.revenue_today_usd)],
  ]
  return (
    <dl class="tiles" aria-label="Fleet at a glance">
      {tiles.map(([label, value]) => (
        <div class="tile" key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
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

function ServerTable({ rows, groups }: { rows: ServerRow[]; groups: Group[] }) {
  const groupName = (id: string | null) => groups.find((g) => g.id === id)?.name ?? '—'
  return (
    <DataTable
      label="Servers"
      head={
        <>
          <th scope="col">Server</th>
          <th scope="col">Presence</th>
          <th scope="col">GPUs</th>
          <th scope="col">Group and tags</th>
          <th scope="col" class="num">
            Max temp
          </th>
          <th scope="col" class="num">
            Utilisation
          </th>
          <th scope="col" class="num">
            Price / GPU-h
          </th>
          <th scope="col" class="num">
            Revenue today
          </th>
          <th scope="col">Last seen</th>
        </>
      }
    >
      {rows.map((s) => (
        <tr key={s.id} data-server={s.id}>
          <td>
            <a href={href(`/servers/${s.id}`)}>{s.name}</a>
            {s.maintenance && (
              <>
                {' '}
                <span class="badge warn" title={s.maintenance.reason ?? undefined}>
                  maintenance
                </span>
              </>
            )}
          </td>
          <td>
            <PresenceBadge presence={s.presence} />
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
          <td class="num">{num(s.max_temp_core_c, ' °C')}</td>
          <td class="num">{num(s.avg_util_pct, ' %')}</td>
          <td class="num">
            <Price usd={s.price_usd_gpu_h} />
          </td>
          <td class="num">
            <Money usd={s.revenue_today_usd} />
          </td>
          <td>{ago(s.last_seen_at)}</td>
        </tr>
      ))}
    </DataTable>
  )
}

export function Fleet() {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS)
  const query = { ...filters, limit: 200 }
  const dashboard = useSnapshot<Dashboard>('/dashboard', {}, [])
  const servers = useSnapshot<Snapshot & { items: ServerRow[]; next_cursor: string | null }>('/servers', query, [JSON.stringify(filters)])
  const groups = useResource(() => get<{ items: Group[] }>('/groups'), [])
  useLive(() => {
    void dashboard.refresh()
    void servers.refresh()
  })
  useInterval(() => void servers.refresh(), VITALS_REFRESH_MS)
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
        {(d) => <Tiles d={d} />}
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
                <ServerTable rows={page.items} groups={groups.data?.items ?? []} />
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
