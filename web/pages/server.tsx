import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { ago, dateTime, marketplaceName, num } from '../lib/format'
import { useLive, VITALS_REFRESH_MS } from '../lib/live'
import { useInterval, useResource } from '../lib/resource'
import { href, navigate } from '../lib/router'
import { can } from '../lib/session'
import type { Command, ServerDetail, ServerMaintenanceBody } from '../lib/api-types'
import { PresenceBadge } from '../ui/badges'
import { Form, TextField, useForm } from '../ui/form'
import { Page, Section } from '../ui/layout'
import { Action, Async, DataTable, Empty } from '../ui/states'
import { CommandList, SendCommand } from './commands'
import { ServerDrain } from './drain'
import { ServerCharts } from './server-charts'
import { ServerHardware } from './server-hardware'
import { ServerReadiness } from './server-readiness'
import { RenterReports } from './server-reports'
import { ServerEvents, ServerLinks, ServerMargin, ServerSettings } from './server-panels'

/** One server: presence and facts, vitals per GPU, hardware and health, readiness, charts, commands, links and offers, margin, events, settings. */

const VITALS: [string, string, string][] = [
  ['temperature_c', 'Core', ' °C'],
  ['hotspot_temperature_c', 'Hotspot', ' °C'],
  ['memory_temperature_c', 'Memory temp', ' °C'],
  ['utilization_pct', 'Utilisation', ' %'],
  ['power_w', 'Power', ' W'],
  ['fan_pct', 'Fan', ' %'],
  ['memory_used_mb', 'Memory used', ' MB'],
  ['clock_sm_mhz', 'Clock', ' MHz'],
]

function Vitals({ s }: { s: ServerDetail }) {
  if (s.gpus.length === 0) return <Empty>The agent has reported no GPUs.</Empty>
  return (
    <DataTable
      label="GPU vitals"
      head={
        <>
          <th scope="col">GPU</th>
          {VITALS.map(([, label]) => (
            <th scope="col" class="num" key={label}>
              {label}
            </th>
          ))}
        </>
      }
    >
      {s.gpus.map((g) => {
        const m = s.telemetry.gpus.find((t) => t.index === g.index)?.metrics ?? {}
        return (
          <tr key={g.index}>
            <th scope="row">
              {g.index}: {g.model}
            </th>
            {VITALS.map(([metric, label, unit]) => (
              <td class="num" key={label}>
                {num(m[metric]?.value, unit)}
              </td>
            ))}
          </tr>
        )
      })}
    </DataTable>
  )
}

function Maintenance({ s, reload }: { s: ServerDetail; reload: () => void }) {
  const form = useForm()
  const [reason, setReason] = useState('')
  if (s.maintenance)
    return (
      <div>
        <p>
          <span class="badge warn">In maintenance</span> since {dateTime(s.maintenance.since)}
          {s.maintenance.reason ? `: ${s.maintenance.reason}` : ''}
        </p>
        {can('operator') && (
          <Action
            label="Take back into service"
            run={async () => {
              await request('DELETE', `/servers/${s.id}/maintenance`)
              reload()
            }}
          />
        )}
      </div>
    )
  if (!can('operator')) return <p>In service.</p>
  return (
    <Form
      form={form}
      class="form inline"
      label="Declare maintenance"
      submit="Declare maintenance"
      onSubmit={async () => {
        await request('PUT', `/servers/${s.id}/maintenance`, { body: { reason: reason.trim() || null } satisfies ServerMaintenanceBody })
        setReason('')
        reload()
      }}
    >
      <TextField form={form} name="/reason" label="Reason (optional)" value={reason} onInput={setReason} />
    </Form>
  )
}

export function ServerPage({ id }: { id: string }) {
  // Read again on every live event or polling tick, without If-None-Match: the detail's ETag is its
  // configuration version, which neither presence nor telemetry moves.
  const server = useResource(() => get<ServerDetail>(`/servers/${id}`), [id])
  useLive(() => server.reload())
  useInterval(() => server.reload(), VITALS_REFRESH_MS)
  return (
    <Page title={server.data?.name ?? 'Server'} actions={<a href={href('/')}>Back to the fleet</a>}>
      <Async r={server} label="Loading the server…">
        {(s) => (
          <>
            <Section title="Presence and facts">
              <dl class="facts">
                <dt>Presence</dt>
                <dd aria-live="polite">
                  <PresenceBadge presence={s.presence} /> <span class="muted">last heartbeat {ago(s.last_seen_at)}</span>
                </dd>
                <dt>GPUs</dt>
                <dd>
                  {s.gpu_count} × {s.gpu_model || '—'}
                </dd>
                <dt>Hostname</dt>
                <dd>{s.hostname ?? '—'}</dd>
                <dt>Public address</dt>
                <dd>{s.public_ip ?? '—'}</dd>
                <dt>Agent</dt>
                <dd>{s.agent_version ?? 'not enrolled yet'}</dd>
                <dt>Disk</dt>
                <dd>{num(s.disk_gb, ' GB')}</dd>
                <dt>Ports</dt>
                <dd>{s.port_range ?? '—'}</dd>
                <dt>Rented</dt>
                <dd>{s.rental_active ? `yes (${s.rental_sources.map(marketplaceName).join(', ')})` : 'no'}</dd>
                <dt>Enrolled</dt>
                <dd>{dateTime(s.enrolled_at, 'not yet')}</dd>
                {s.decommissioned_at && (
                  <>
                    <dt>Decommissioned</dt>
                    <dd>{dateTime(s.decommissioned_at)}</dd>
                  </>
                )}
              </dl>
            </Section>
            <Section title="Maintenance">
              <Maintenance s={s} reload={server.reload} />
            </Section>
            <ServerDrain serverId={id} decommissioned={s.decommissioned_at !== null} />
            <Section title="GPU vitals">
              <Vitals s={s} />
            </Section>
            <ServerHardware s={s} />
            <ServerReadiness serverId={id} version={s.last_seen_at} />
            <ServerCharts serverId={id} />
            <Section title="Commands">
              {can('operator') && !s.decommissioned_at && (
                <details>
                  <summary>Send a command</summary>
                  <SendCommand serverId={id} onSent={(c: Command) => navigate(`/commands/${c.command_id}`)} />
                </details>
              )}
              <CommandList serverId={id} />
            </Section>
            <ServerLinks serverId={id} />
            <RenterReports serverId={id} />
            <ServerMargin margin={s.margin} />
            <ServerEvents serverId={id} />
            {can('operator') && !s.decommissioned_at && <ServerSettings s={s} saved={server.set} />}
            {can('operator') && !s.decommissioned_at && (
              <Section title="Decommission">
                <p>Revokes the agent's credential (its session closes), stops billing for this server and keeps its history.</p>
                <Action
                  label="Decommission this server"
                  class="danger"
                  confirm={`Decommission ${s.name}? Its agent stops working and billing stops.`}
                  run={async () => server.set((await request<ServerDetail>('POST', `/servers/${id}/decommission`)).data)}
                />
              </Section>
            )}
          </>
        )}
      </Async>
    </Page>
  )
}
