import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import type { Group, ListingProfile, ListingProfileApply, ListingProfileCreateBody } from '../lib/api-types'
import { ago, MARKETPLACES, marketplaceName } from '../lib/format'
import { type Resource, useResource } from '../lib/resource'
import { can } from '../lib/session'
import { CheckField, Form, SelectField, TextField, useForm } from '../ui/form'
import { Section } from '../ui/layout'
import { Action, Async, Empty, TableWrap } from '../ui/states'

/**
 * Group listing profiles (docs/marketplaces.md "Listing profiles"): what every server of a group
 * carries on a marketplace — price, min bid, min GPU chunk, rolling end date, idle job, keep-on —
 * and applying one, with each server's outcome. The form takes marketplace_a's USD fields; a
 * marketplace_b profile made here carries keep-on only (its coin prices go through the API).
 */

const opt = (v: string) => (v.trim() === '' ? undefined : v.trim())

function CreateProfile({ groups, done }: { groups: Group[]; done: () => void }) {
  const form = useForm()
  const [name, setName] = useState('')
  const [groupId, setGroupId] = useState(groups[0]?.id ?? '')
  const [marketplace, setMarketplace] = useState<'marketplace_a' | 'marketplace_b'>('marketplace_a')
  const [price, setPrice] = useState('')
  const [minBid, setMinBid] = useState('')
  const [minChunk, setMinChunk] = useState('')
  const [days, setDays] = useState('')
  const [image, setImage] = useState('')
  const [idlePrice, setIdlePrice] = useState('')
  const [keepOn, setKeepOn] = useState(false)
  const a = marketplace === 'marketplace_a'
  return (
    <Form
      form={form}
      class="form"
      label="New listing profile"
      submit="Create the profile"
      onSubmit={async () => {
        const offer =
          a && opt(price) !== undefined
            ? { price_gpu_hour: opt(price), min_bid_hour: opt(minBid), min_gpu_count: opt(minChunk) === undefined ? undefined : Number(minChunk) }
            : undefined
        const body: ListingProfileCreateBody = {
          name,
          group_id: groupId,
          marketplace,
          ...(offer ? { offer } : {}),
          ...(a && opt(days) !== undefined ? { end_date_days: Number(days) } : {}),
          ...(a && opt(image) !== undefined ? { idle_job: { image: image.trim(), price_gpu_hour: idlePrice.trim() } } : {}),
          ...(keepOn ? { keep_on: true } : {}),
        }
        await request('POST', '/listing-profiles', { body })
        setName('')
        done()
      }}
    >
      <TextField form={form} name="/name" label="Profile name" value={name} onInput={setName} />
      <SelectField form={form} name="/group_id" label="Group" value={groupId} onChange={setGroupId} options={groups.map((g) => [g.id, g.name])} />
      <SelectField
        form={form}
        name="/marketplace"
        label="Marketplace"
        value={marketplace}
        onChange={(v) => setMarketplace(v as typeof marketplace)}
        options={Object.entries(MARKETPLACES)}
      />
      {a && (
        <>
          <TextField form={form} name="/offer/price_gpu_hour" label="Price, USD per GPU-hour" inputMode="decimal" value={price} onInput={setPrice} />
          <TextField form={form} name="/offer/min_bid_hour" label="Min bid, USD per GPU-hour" inputMode="decimal" value={minBid} onInput={setMinBid} />
          <TextField form={form} name="/offer/min_gpu_count" label="Min GPU chunk" inputMode="numeric" value={minChunk} onInput={setMinChunk} />
          <TextField
            form={form}
            name="/end_date_days"
            label="Keep the end date this many days ahead"
            hint="8 or more: extended before the platform's seven-day warning"
            inputMode="numeric"
            value={days}
            onInput={setDays}
          />
          <TextField form={form} name="/idle_job/image" label="Idle job image" value={image} onInput={setImage} />
          <TextField
            form={form}
            name="/idle_job/price_gpu_hour"
            label="Idle job price, USD per GPU-hour"
            inputMode="decimal"
            value={idlePrice}
            onInput={setIdlePrice}
          />
        </>
      )}
      <CheckField form={form} name="/keep_on" label="Keep listed (keep-on)" checked={keepOn} onChange={setKeepOn} />
    </Form>
  )
}

function summary(p: ListingProfile): string {
  const parts: string[] = []
  const offer = p.offer as { price_gpu_hour?: string; min_bid_hour?: string; min_gpu_count?: number } | null
  if (offer?.price_gpu_hour) parts.push(`${offer.price_gpu_hour} USD/GPU-h`)
  if (offer?.min_bid_hour) parts.push(`bids from ${offer.min_bid_hour}`)
  if (offer?.min_gpu_count) parts.push(`min ${offer.min_gpu_count} GPUs`)
  if (p.end_date_days !== null) parts.push(`end date ${p.end_date_days} days ahead`)
  if (p.idle_job) parts.push(`idle job ${p.idle_job.image} at ${p.idle_job.price_gpu_hour}`)
  if (p.keep_on !== null) parts.push(p.keep_on ? 'keep-on' : 'no keep-on')
  return parts.length ? parts.join(', ') : 'nothing set'
}

/** How the group's servers stand with the profile: "2 done, 1 skipped, 1 pending". */
function members(p: ListingProfile): string {
  const n = (o: string) => p.members.filter((m) => m.outcome === o).length
  const parts = (['done', 'refused', 'skipped', 'pending'] as const).filter((o) => n(o) > 0).map((o) => `${n(o)} ${o}`)
  return parts.length ? parts.join(', ') : 'no servers'
}

export function ListingProfiles({ groups }: { groups: Resource<{ items: Group[] }> }) {
  const profiles = useResource(() => get<{ items: ListingProfile[] }>('/listing-profiles'), [])
  const [applied, setApplied] = useState<ListingProfileApply | null>(null)
  const groupName = (id: string) => groups.data?.items.find((g) => g.id === id)?.name ?? id
  return (
    <Section title="Listing profiles">
      <Async r={profiles}>
        {({ items }) =>
          items.length === 0 ? (
            <Empty>
              No listing profiles. A profile sets price, min bid, min GPU chunk, rolling end date, idle job and keep-on for every server of a group.
            </Empty>
          ) : (
            <TableWrap label="Listing profiles">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Profile</th>
                    <th scope="col">Group</th>
                    <th scope="col">Marketplace</th>
                    <th scope="col">Settings</th>
                    <th scope="col">Servers</th>
                    <th scope="col">Applied</th>
                    {can('admin') && <th scope="col">Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {items.map((p) => (
                    <tr key={p.id} data-profile={p.id}>
                      <td>{p.name}</td>
                      <td>{groupName(p.group_id)}</td>
                      <td>{marketplaceName(p.marketplace)}</td>
                      <td>{summary(p)}</td>
                      <td>{members(p)}</td>
                      <td>{p.applied_at ? ago(p.applied_at) : 'never'}</td>
                      {can('admin') && (
                        <td>
                          <Action
                            label="Apply"
                            busyLabel="Applying…"
                            run={async () => {
                              const r = await request<ListingProfileApply>('POST', `/listing-profiles/${p.id}/apply`)
                              setApplied(r.data)
                              profiles.reload()
                            }}
                          />{' '}
                          <Action
                            label="Delete"
                            class="danger"
                            confirm={`Delete the profile ${p.name}? The servers keep what it set.`}
                            run={async () => {
                              await request('DELETE', `/listing-profiles/${p.id}`)
                              profiles.reload()
                            }}
                          />
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )
        }
      </Async>
      {applied && (
        <div role="status" aria-label="Applied">
          <p>
            Applied {applied.profile.name}: {applied.results.filter((r) => r.outcome === 'done').length} done,{' '}
            {applied.results.filter((r) => r.outcome === 'refused').length} refused, {applied.results.filter((r) => r.outcome === 'skipped').length} skipped.
          </p>
          <ul>
            {applied.results.map((r) => (
              <li key={r.server_id}>
                {r.server_name}: {r.outcome}
                {r.reason ? ` (${r.reason})` : ''}
              </li>
            ))}
          </ul>
        </div>
      )}
      {can('admin') && (
        <Async r={groups}>
          {({ items: all }) =>
            all.length === 0 ? (
              <p class="muted small">Create a group first: a profile applies to a group.</p>
            ) : (
              <CreateProfile groups={all} done={() => profiles.reload()} />
            )
          }
        </Async>
      )}
    </Section>
  )
}
