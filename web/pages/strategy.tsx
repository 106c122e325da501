import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import { ApiError, get, request } from '../lib/api'
import { ago, MARKETPLACES, type Marketplace, marketplaceName } from '../lib/format'
import { useIdempotency, usePaged, useResource } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { DismissBody, Group, Policy, PolicyCreateBody, ServerRow, StrategyPreview, Suggestion } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Form, SelectField, TextField, useForm } from '../ui/form'
import { Money, Price } from '../ui/money'
import { Page, Section } from '../ui/layout'
import { Action, Async, DataTable, Empty, ErrorNote, Paged } from '../ui/states'

/**
 * Pricing strategy (docs/strategy.md): policies that price listed offers from the market and the
 * owner's costs, a preview before saving, and the suggestions they make, accepted (which publishes
 * the price) or dismissed with a reason.
 */

/** One priced server of a preview or a suggestion. */
type Priced = StrategyPreview['items'][number]

function PolicyForm({ servers, groups, created }: { servers: ServerRow[]; groups: Group[]; created: () => void }) {
  const form = useForm()
  const idem = useIdempotency()
  const [name, setName] = useState('')
  const [marketplace, setMarketplace] = useState<Marketplace>('marketplace_a')
  const [kind, setKind] = useState('gpu_model')
  const [value, setValue] = useState('')
  const [percentile, setPercentile] = useState('50')
  const [margin, setMargin] = useState('10')
  const [ceiling, setCeiling] = useState('')
  const [preview, setPreview] = useState<StrategyPreview | null>(null)
  const body = (): PolicyCreateBody => ({
    name: name.trim(),
    marketplace,
    target: kind === 'server_ids' ? { server_ids: value ? [value] : [] } : { [kind]: value.trim() },
    target_percentile: Number(percentile),
    min_margin_percent: margin.trim() || '0',
    ceiling_gpu_hour: ceiling.trim() || null,
  })
  const targetOptions: [string, string][] =
    kind === 'server_ids'
      ? [['', 'Choose a server'], ...servers.map((s): [string, string] => [s.id, s.name])]
      : [['', 'Choose a group'], ...groups.map((g): [string, string] => [g.id, g.name])]
  return (
    <>
      <Form
        form={form}
        label="New policy"
        submit="Create the policy"
        onSubmit={async () => {
          const b = body()
          await request('POST', '/strategy/policies', { body: b, idempotencyKey: idem.keyFor(b) })
          idem.done()
          setName('')
          setPreview(null)
          created()
        }}
        secondary={
          <button
            type="button"
            onClick={() =>
              void form.run(async () => setPreview((await request<NonNullable<typeof preview>>('POST', '/strategy/preview', { body: body() })).data))
            }
          >
            Preview the prices
          </button>
        }
      >
        <TextField form={form} name="/name" label="Name" value={name} onInput={setName} />
        <SelectField
          form={form}
          name="/marketplace"
          label="Marketplace"
          value={marketplace}
          onChange={(v) => setMarketplace(v as Marketplace)}
          options={Object.entries(MARKETPLACES)}
        />
        <SelectField
          form={form}
          name="/target"
          label="Prices the offers of"
          value={kind}
          onChange={(v) => {
            setKind(v)
            setValue('')
          }}
          options={[
            ['gpu_model', 'A GPU model'],
            ['group_id', 'A group'],
            ['server_ids', 'One server'],
          ]}
        />
        {kind === 'gpu_model' ? (
          <TextField form={form} name={`/target/${kind}`} label="GPU model" hint="The normalised key, for example rtx_4090." value={value} onInput={setValue} />
        ) : (
          <SelectField
            form={form}
            name={`/target/${kind}`}
            label={kind === 'group_id' ? 'Group' : 'Server'}
            value={value}
            onChange={setValue}
            options={targetOptions}
          />
        )}
        <TextField
          form={form}
          name="/target_percentile"
          label="Market percentile"
          hint="0 the cheapest ask, 50 the median, 100 the dearest."
          inputMode="numeric"
          value={percentile}
          onInput={setPercentile}
        />
        <TextField form={form} name="/min_margin_percent" label="Margin above your costs (%)" inputMode="decimal" value={margin} onInput={setMargin} />
        <TextField
          form={form}
          name="/ceiling_gpu_hour"
          label="Never above (USD per GPU-hour, optional)"
          inputMode="decimal"
          value={ceiling}
          onInput={setCeiling}
        />
      </Form>
      {preview &&
        (preview.items.length === 0 ? (
          <Empty>
            Nothing to price now
            {preview.skipped.length > 0 && `: ${preview.skipped.map((s) => s.reason).join('; ')}`}.
          </Empty>
        ) : (
          <PricedTable items={preview.items} servers={servers} label="Preview" />
        ))}
    </>
  )
}

/** What set the price (`bound_by`), as a sentence. */
const SET_BY: Record<Priced['bound_by'], string> = {
  market: 'Set by the market.',
  floor: 'Set by your floor.',
  ceiling: 'Set by your ceiling.',
  held_for_renters: 'Held at the current price while renters run (the policy holds raises then).',
  no_market: 'Kept at the current price, within floor and ceiling: no market data for the model.',
}

/** 1st, 2nd, 3rd, 4th … 11th, 12th, 13th … 21st. */
function ordinal(n: number): string {
  const tens = n % 100
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th')
  return `${n}${suffix}`
}

/**
 * Why this price, from the evaluation's own fields with every amount formatted (the API's
 * `reasons` say the same in words, with the amounts as stored), one line each, and its warnings
 * (an estimated floor says what it leaves out there: `estimated_floor`).
 */
function Why({ p }: { p: Priced }) {
  const f = p.floor
  return (
    <ul class="why">
      <li>{SET_BY[p.bound_by]}</li>
      {p.market.price_at_percentile !== null && (
        <li>
          Market: the {ordinal(p.market.target_percentile)} percentile of {p.market.offers === 1 ? '1 offer' : `${p.market.offers} offers`} is{' '}
          <Price usd={p.market.price_at_percentile} /> per GPU-hour.
        </li>
      )}
      <li>
        Floor: <Price usd={f.price_gpu_hour} /> (costs <Price usd={f.cost_gpu_hour} /> plus {f.min_margin_percent} % margin
        {f.commission_percent !== null ? `, after the platform's ${f.commission_percent} % cut` : ''}).
      </li>
      {p.ceiling_gpu_hour !== null && (
        <li>
          Ceiling: <Price usd={p.ceiling_gpu_hour} />.
        </li>
      )}
      {p.warnings.map((w) => (
        <li key={w.code} class="why-warning">
          {w.message}
        </li>
      ))}
    </ul>
  )
}

function PricedTable({ items, servers, label, actions }: { items: Priced[]; servers: ServerRow[]; label: string; actions?: (p: Priced) => ComponentChildren }) {
  const name = (id: string) => servers.find((s) => s.id === id)?.name ?? id.slice(0, 8)
  return (
    <DataTable
      label={label}
      head={
        <>
          <th scope="col">Server</th>
          <th scope="col">Marketplace</th>
          <th scope="col" class="num">
            Now
          </th>
          <th scope="col" class="num">
            Suggested
          </th>
          <th scope="col">Why</th>
          <th scope="col" class="num">
            Per day
          </th>
          {actions && <th scope="col">Decide</th>}
        </>
      }
    >
      {items.map((p, i) => (
        <tr key={`${p.server_id}-${i}`}>
          <td>{name(p.server_id)}</td>
          <td>{marketplaceName(p.marketplace)}</td>
          <td class="num">
            <Price usd={p.current_price_gpu_hour} />
          </td>
          <td class="num">
            <Price usd={p.suggested_price_gpu_hour} /> ({p.change})
          </td>
          <td class="small text">
            <Why p={p} />
          </td>
          <td class="num">
            <Money usd={p.expected_change_usd_day} />
          </td>
          {actions && <td>{actions(p)}</td>}
        </tr>
      ))}
    </DataTable>
  )
}

function Dismiss({ s, done }: { s: Suggestion; done: () => void }) {
  const form = useForm()
  const [reason, setReason] = useState('')
  return (
    <details>
      <summary>Dismiss</summary>
      <Form
        form={form}
        label="Dismiss the suggestion"
        submit="Dismiss"
        onSubmit={async () => {
          await request('POST', `/strategy/suggestions/${s.id}/dismiss`, { body: { reason: reason.trim() } satisfies DismissBody })
          done()
        }}
      >
        <TextField form={form} name="/reason" label="Why" value={reason} onInput={setReason} />
      </Form>
    </details>
  )
}

export function StrategyPage() {
  const policies = useResource(() => get<{ items: Policy[] }>('/strategy/policies'), [])
  const suggestions = usePaged<Suggestion>('/strategy/suggestions', { state: 'pending', limit: 50 }, [])
  const servers = useResource(() => get<{ items: ServerRow[] }>('/servers', { limit: 200 }), [])
  const groups = useResource(() => get<{ items: Group[] }>('/groups'), [])
  const idem = useIdempotency()
  const notOnPlan = policies.error instanceof ApiError && policies.error.problem.code === 'feature_not_entitled'
  const list = servers.data?.items ?? []
  if (notOnPlan)
    return (
      <Page title="Strategy">
        <Section title="Not on your plan">
          <p>
            Pricing strategy comes with the Pro and Enterprise plans. <a href={href('/billing/plan')}>See the plans</a>.
          </p>
        </Section>
      </Page>
    )
  return (
    <Page title="Strategy">
      <Section title="Suggestions">
        <Paged r={suggestions} loading="Loading the suggestions…" empty="No pending suggestion. Policies look again at their cadence.">
          {(items) => (
            <PricedTable
              items={items}
              servers={list}
              label="Pending suggestions"
              actions={
                can('admin')
                  ? (p) => {
                      const s = p as Suggestion
                      return (
                        <>
                          <Action
                            label="Accept and publish"
                            run={async () => {
                              await request('POST', `/strategy/suggestions/${s.id}/accept`, { idempotencyKey: idem.keyFor({ id: s.id }) })
                              suggestions.reload()
                            }}
                          />
                          <Dismiss s={s} done={suggestions.reload} />
                        </>
                      )
                    }
                  : undefined
              }
            />
          )}
        </Paged>
      </Section>
      <Section title="Policies">
        {policies.error && !policies.data ? (
          <ErrorNote error={policies.error} retry={policies.reload} />
        ) : (
          <Async r={policies} label="Loading the policies…">
            {({ items }) =>
              items.length === 0 ? (
                <Empty>No pricing policy yet.</Empty>
              ) : (
                <DataTable
                  label="Policies"
                  head={
                    <>
                      <th scope="col">Policy</th>
                      <th scope="col">Marketplace</th>
                      <th scope="col">Prices</th>
                      <th scope="col">State</th>
                      <th scope="col">Last looked</th>
                      {can('admin') && <th scope="col">Delete</th>}
                    </>
                  }
                >
                  {items.map((p) => (
                    <tr key={p.id}>
                      <td>{p.name}</td>
                      <td>{marketplaceName(p.marketplace)}</td>
                      <td>
                        percentile {p.target_percentile}, margin {p.min_margin_percent} %,{' '}
                        {Object.keys(p.target)[0]?.replace('_ids', 's').replace('_id', '').replace('_', ' ')}
                      </td>
                      <td>
                        <StatusBadge status={p.enabled ? 'active' : 'paused'} />
                      </td>
                      <td class="nowrap">{ago(p.last_run_at)}</td>
                      {can('admin') && (
                        <td>
                          <Action
                            label={`Delete ${p.name}`}
                            class="danger"
                            confirm={`Delete the policy ${p.name}?`}
                            run={async () => {
                              await request('DELETE', `/strategy/policies/${p.id}`, { ifMatch: `"${p.version}"` })
                              policies.reload()
                            }}
                          />
                        </td>
                      )}
                    </tr>
                  ))}
                </DataTable>
              )
            }
          </Async>
        )}
      </Section>
      {can('admin') && (
        <Section title="New policy">
          <PolicyForm servers={list} groups={groups.data?.items ?? []} created={policies.reload} />
        </Section>
      )}
    </Page>
  )
}
