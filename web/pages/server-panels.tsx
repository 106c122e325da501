import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { dateTime, marketplaceName } from '../lib/format'
import { usePaged, useResource } from '../lib/resource'
import { href } from '../lib/router'
import type { Group, Link, ServerDetail, ServerEvent, ServerMargin as Margin, ServerPatchBody } from '../lib/api-types'
import { DottedName, StatusBadge } from '../ui/badges'
import { Money, Price } from '../ui/money'
import { Form, SelectField, TextField, useForm } from '../ui/form'
import { Section } from '../ui/layout'
import { Async, DataTable, Empty, PagedTable } from '../ui/states'

/** The lower panels of a server's page. */

export function ServerEvents({ serverId }: { serverId: string }) {
  const events = usePaged<ServerEvent>(`/servers/${serverId}/events`, { limit: 20 }, [serverId])
  return (
    <Section
      title="Events"
      actions={
        <button type="button" onClick={events.reload}>
          Refresh
        </button>
      }
    >
      <PagedTable
        r={events}
        loading="Loading the events…"
        empty="No events yet."
        label="Events"
        head={
          <>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Severity</th>
            <th scope="col">Message</th>
          </>
        }
        row={(e) => (
          <tr key={e.id}>
            <td class="nowrap">{dateTime(e.created_at)}</td>
            <td>
              <DottedName name={e.kind} />
            </td>
            <td>
              <StatusBadge status={e.severity} />
            </td>
            <td>{e.message}</td>
          </tr>
        )}
      />
    </Section>
  )
}

export function ServerLinks({ serverId }: { serverId: string }) {
  const links = useResource(() => get<{ links: Link[] }>('/marketplaces/links'), [serverId])
  return (
    <Section title="Links and offers" actions={<a href={href('/marketplaces')}>Manage on Marketplaces</a>}>
      <Async r={links} label="Loading the links…">
        {({ links: all }) => {
          const mine = all.filter((l) => l.server_id === serverId)
          if (mine.length === 0) return <Empty>Not linked to a marketplace machine yet. Link it on the Marketplaces page.</Empty>
          return (
            <DataTable
              label="Links"
              head={
                <>
                  <th scope="col">Marketplace</th>
                  <th scope="col">Machine</th>
                  <th scope="col">Link</th>
                  <th scope="col">Listed</th>
                  <th scope="col" class="num">
                    Price / GPU-h
                  </th>
                  <th scope="col" class="num">
                    Rentals
                  </th>
                  <th scope="col">End date</th>
                  <th scope="col">Idle job</th>
                </>
              }
            >
              {mine.map((l) => (
                <tr key={l.marketplace}>
                  <td>{marketplaceName(l.marketplace)}</td>
                  <td>{l.external_machine_id}</td>
                  <td>
                    <StatusBadge status={l.state} />
                  </td>
                  <td>{l.remote.listed === null ? '—' : l.remote.listed ? 'yes' : 'no'}</td>
                  <td class="num">
                    <Price usd={l.remote.price_gpu_hour} />
                  </td>
                  <td class="num">{l.remote.rentals_running ?? '—'}</td>
                  <td>
                    {l.remote.end_date ? l.remote.end_date.slice(0, 10) : '—'}
                    {l.listing.end_date_days !== null && <span class="muted small"> (kept {l.listing.end_date_days} days ahead)</span>}
                  </td>
                  <td>{l.listing.idle_job ? `${l.listing.idle_job.image} at ${l.listing.idle_job.price_gpu_hour} USD/GPU-h` : '—'}</td>
                </tr>
              ))}
            </DataTable>
          )
        }}
      </Async>
    </Section>
  )
}

const MISSING: Record<string, string> = { electricity: 'no electricity tariff or power measurements', commission: 'no platform commission entered' }

export function ServerMargin({ margin }: { margin?: Margin }) {
  return (
    <Section title="Margin">
      {!margin ? (
        <Empty>No margin yet: it needs earnings from a linked marketplace machine.</Empty>
      ) : (
        <>
          <dl class="tiles" aria-label={`Margin over ${margin.days} days`}>
            {(
              [
                ['Earned', margin.earned_usd],
                ['Platform cut', margin.platform_cut_usd],
                ['Electricity', margin.electricity_usd],
                ['gpuhq charges', margin.gpuhq_charges_usd],
                ['Margin', margin.margin_usd],
              ] as [string, string | null][]
            ).map(([label, v]) => (
              <div class="tile" key={label}>
                <dt>{label}</dt>
                <dd>
                  <Money usd={v} empty="unknown" />
                </dd>
              </div>
            ))}
          </dl>
          <p class="muted small">
            {margin.from_day} to {margin.to_day}.{' '}
            {margin.estimate && `An estimate: ${margin.missing.map((m) => MISSING[m] ?? m).join('; ')} (left out, never counted as zero).`}
          </p>
        </>
      )}
    </Section>
  )
}

export function ServerSettings({ s, saved }: { s: ServerDetail; saved: (s: ServerDetail) => void }) {
  const groups = useResource(() => get<{ items: Group[] }>('/groups'), [])
  const form = useForm()
  const [name, setName] = useState(s.name)
  const [group, setGroup] = useState(s.group_id ?? '')
  const [tags, setTags] = useState(s.tags.join(' '))
  const [tariff, setTariff] = useState(s.electricity_usd_per_kwh ?? '')
  const [done, setDone] = useState(false)
  return (
    <Section title="Settings">
      <Form
        form={form}
        label="Server settings"
        submit="Save the settings"
        busyLabel="Saving…"
        onSubmit={async () => {
          setDone(false)
          const { data } = await request<ServerDetail>('PATCH', `/servers/${s.id}`, {
            body: {
              name: name.trim(),
              group_id: group || null,
              tags: tags.split(/[\s,]+/).filter(Boolean),
              electricity_usd_per_kwh: tariff.trim() || null,
            } satisfies ServerPatchBody,
            ifMatch: `"${s.version}"`,
          })
          saved(data)
          setDone(true)
        }}
      >
        <TextField form={form} name="/name" label="Name" value={name} onInput={setName} />
        <SelectField
          form={form}
          name="/group_id"
          label="Group"
          value={group}
          onChange={setGroup}
          options={[['', 'No group'], ...(groups.data?.items ?? []).map((g): [string, string] => [g.id, g.name])]}
        />
        <TextField
          form={form}
          name="/tags"
          label="Tags"
          hint="key or key:value, separated by spaces (for example site:fra-1 owned)"
          value={tags}
          onInput={setTags}
        />
        <TextField
          form={form}
          name="/electricity_usd_per_kwh"
          label="Electricity tariff (USD per kWh)"
          hint="For the margin; empty means not entered."
          inputMode="decimal"
          value={tariff}
          onInput={setTariff}
        />
        {done && (
          <p role="status" class="note">
            Saved.
          </p>
        )}
      </Form>
    </Section>
  )
}
