import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import type { BulkBody, BulkOperation, BulkOperationSummary, BulkPreview, Group, ServerRow } from '../lib/api-types'
import { dateTime, MARKETPLACES, type Marketplace, marketplaceName } from '../lib/format'
import { useIdempotency, useInterval, usePaged, useResource } from '../lib/resource'
import { href, navigate } from '../lib/router'
import { can } from '../lib/session'
import { StatusBadge } from '../ui/badges'
import { CheckField, Form, SelectField, TextField, useForm } from '../ui/form'
import { Money } from '../ui/money'
import { Page, Section } from '../ui/layout'
import { Action, Async, DataTable, Paged } from '../ui/states'

/**
 * Bulk changes (docs/marketplaces.md "Bulk changes"): choose servers (ticked, or a whole group), a
 * marketplace and the change (reprice, publish, withdraw), see each machine's change before
 * confirming, then watch each machine's outcome as the bulk.run job sends them.
 */

type Action_ = BulkBody['action']
type Side = BulkPreview['items'][number]['before']
const ACTIONS: [Action_, string][] = [
  ['reprice', 'Reprice listed machines'],
  ['publish', 'Publish (list) machines'],
  ['withdraw', 'Withdraw offers'],
]
const COIN = 'CLORE-Blockchain'

/** An offer in a few words: listed or not, and its price. */
function Offer({ side, marketplace }: { side: Side; marketplace: string }) {
  if (!side) return <span class="muted">—</span>
  const listed = side.listed === true ? 'listed' : side.listed === false ? 'not listed' : 'unknown'
  if (marketplace === 'marketplace_a')
    return (
      <span>
        {listed}
        {side.price_gpu_hour && (
          <>
            , <Money usd={side.price_gpu_hour} per="price" />
            /GPU-h
          </>
        )}
      </span>
    )
  const coin = side.coin_prices?.[COIN]?.on_demand
  return (
    <span>
      {listed}
      {coin && `, ${coin} CLORE/day`}
    </span>
  )
}

function BulkForm() {
  const form = useForm()
  const idem = useIdempotency()
  const servers = useResource(() => get<{ items: ServerRow[] }>('/servers', { limit: 200 }), [])
  const groups = useResource(() => get<{ items: Group[] }>('/groups'), [])
  const [marketplace, setMarketplace] = useState<Marketplace>('marketplace_a')
  const [action, setAction] = useState<Action_>('reprice')
  const [price, setPrice] = useState('')
  const [groupId, setGroupId] = useState('')
  const [ticked, setTicked] = useState<Set<string>>(new Set())
  const [preview, setPreview] = useState<BulkPreview | null>(null)
  const body = (): BulkBody => {
    const selection = groupId ? { group_id: groupId } : { server_ids: [...ticked] }
    const p = price.trim()
    const prices = action === 'withdraw' || !p ? {} : marketplace === 'marketplace_a' ? { price_gpu_hour: p } : { coin_prices: { [COIN]: { on_demand: p } } }
    return { marketplace, action, ...selection, ...prices }
  }
  const changed = () => setPreview(null)
  const rows = servers.data?.items ?? []
  return (
    <Section title="New bulk change">
      <Form
        form={form}
        label="Bulk change"
        submit="Preview each machine's change"
        onSubmit={async () => setPreview((await request<BulkPreview>('POST', '/bulk-operations/preview', { body: body() })).data)}
      >
        <SelectField
          form={form}
          name="/marketplace"
          label="Marketplace"
          value={marketplace}
          onChange={(v) => {
            setMarketplace(v as Marketplace)
            changed()
          }}
          options={Object.entries(MARKETPLACES)}
        />
        <SelectField
          form={form}
          name="/action"
          label="What to change"
          value={action}
          onChange={(v) => {
            setAction(v as Action_)
            changed()
          }}
          options={ACTIONS}
        />
        {action !== 'withdraw' && (
          <TextField
            form={form}
            name={marketplace === 'marketplace_a' ? '/price_gpu_hour' : '/coin_prices'}
            label={marketplace === 'marketplace_a' ? 'New price per GPU-hour (USD)' : 'New price per day for the whole server (CLORE)'}
            hint={action === 'publish' ? 'Optional: without it each machine is listed at its kept offer or its last price.' : undefined}
            value={price}
            inputMode="decimal"
            onInput={(v) => {
              setPrice(v)
              changed()
            }}
          />
        )}
        <SelectField
          form={form}
          name="/group_id"
          label="Whole group"
          value={groupId}
          onChange={(v) => {
            setGroupId(v)
            changed()
          }}
          options={[['', 'No: the servers ticked below'], ...(groups.data?.items ?? []).map((g): [string, string] => [g.id, g.name])]}
        />
        {!groupId && (
          <fieldset class="bulk-servers">
            <legend>Servers</legend>
            {rows.length === 0 && <p class="muted small">No servers yet.</p>}
            {rows.map((s, i) => (
              <CheckField
                key={s.id}
                form={form}
                name={`/server_ids/${i}`}
                label={s.name}
                checked={ticked.has(s.id)}
                onChange={(on) => {
                  const next = new Set(ticked)
                  if (on) next.add(s.id)
                  else next.delete(s.id)
                  setTicked(next)
                  changed()
                }}
              />
            ))}
          </fieldset>
        )}
      </Form>
      {preview && (
        <div class="bulk-preview">
          <h3>Preview</h3>
          <p>
            {preview.counts.change} of {preview.counts.total} machines change; {preview.counts.skip} skipped. Nothing has been sent yet.
          </p>
          <DataTable
            label="Each machine's change"
            head={
              <>
                <th scope="col">Server</th>
                <th scope="col">Machine</th>
                <th scope="col">Now</th>
                <th scope="col">After</th>
              </>
            }
          >
            {preview.items.map((i) => (
              <tr key={i.server_id} data-server={i.server_name}>
                <td>{i.server_name}</td>
                <td>{i.external_machine_id ?? '—'}</td>
                <td>
                  <Offer side={i.before} marketplace={preview.marketplace} />
                </td>
                <td>{i.outcome === 'change' ? <Offer side={i.after} marketplace={preview.marketplace} /> : <span class="muted">skipped: {i.reason}</span>}</td>
              </tr>
            ))}
          </DataTable>
          {preview.counts.change > 0 && can('admin') && (
            <Action
              class="primary"
              label={`Confirm: change ${preview.counts.change} machines`}
              busyLabel="Starting…"
              run={async () => {
                const b = body()
                const op = (await request<BulkOperation>('POST', '/bulk-operations', { body: b, idempotencyKey: idem.keyFor(b) })).data
                idem.done()
                navigate(`/marketplaces/bulk/${op.id}`)
              }}
            />
          )}
        </div>
      )}
    </Section>
  )
}

function Recent() {
  const ops = usePaged<BulkOperationSummary>('/bulk-operations', { limit: 20 }, [])
  return (
    <Section title="Recent bulk changes">
      <Paged r={ops} loading="Loading the bulk changes…" empty="No bulk changes yet.">
        {(items) => (
          <DataTable
            label="Bulk changes"
            head={
              <>
                <th scope="col">Started</th>
                <th scope="col">Change</th>
                <th scope="col">State</th>
                <th scope="col">Outcome</th>
              </>
            }
          >
            {items.map((o) => (
              <tr key={o.id}>
                <td>
                  <a href={href(`/marketplaces/bulk/${o.id}`)}>{dateTime(o.created_at)}</a>
                </td>
                <td>
                  {o.action} on {marketplaceName(o.marketplace)}
                </td>
                <td>
                  <StatusBadge status={o.state} />
                </td>
                <td>
                  {o.counts.done} done, {o.counts.refused} refused, {o.counts.skipped} skipped
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </Paged>
    </Section>
  )
}

export function BulkPage() {
  return (
    <Page title="Bulk changes">
      <p class="muted">
        Publish, withdraw or reprice many machines at once. Each machine's change is shown first; once confirmed, they are sent one after the other at the pace
        the marketplace allows, and each one's outcome shows here. <a href={href('/marketplaces')}>Back to the marketplaces</a>.
      </p>
      {can('admin') && <BulkForm />}
      <Recent />
    </Page>
  )
}

/** One bulk operation: its counts and each machine's outcome, read again every 2 s while it runs. */
export function BulkOperationPage({ id }: { id: string }) {
  const op = useResource(() => get<BulkOperation>(`/bulk-operations/${id}`), [id])
  useInterval(() => op.reload(), op.data?.state === 'running' ? 2000 : null)
  return (
    <Page title="Bulk change">
      <p>
        <a href={href('/marketplaces/bulk')}>All bulk changes</a>
      </p>
      <Async r={op}>
        {(o) => (
          <>
            <p>
              {o.action} on {marketplaceName(o.marketplace)}, started {dateTime(o.created_at)}: <StatusBadge status={o.state} />
            </p>
            <p class="bulk-counts" aria-live="polite">
              {o.counts.done} done, {o.counts.refused} refused, {o.counts.skipped} skipped, {o.counts.failed} failed, {o.counts.pending} waiting
              {o.counts.cancelled ? `, ${o.counts.cancelled} cancelled` : ''}
            </p>
            {o.state === 'running' && can('admin') && (
              <Action
                label="Cancel what was not sent"
                confirm="Cancel the machines not sent yet? Those already changed stay changed."
                run={async () => {
                  op.set((await request<BulkOperation>('POST', `/bulk-operations/${o.id}/cancel`)).data)
                }}
              />
            )}
            <DataTable
              label="Each machine's outcome"
              head={
                <>
                  <th scope="col">Server</th>
                  <th scope="col">Machine</th>
                  <th scope="col">Before</th>
                  <th scope="col">After</th>
                  <th scope="col">Outcome</th>
                </>
              }
            >
              {o.items.map((i) => (
                <tr key={i.server_id} data-server={i.server_name} data-state={i.state}>
                  <td>
                    <a href={href(`/servers/${i.server_id}`)}>{i.server_name}</a>
                  </td>
                  <td>{i.external_machine_id ?? '—'}</td>
                  <td>
                    <Offer side={i.before} marketplace={o.marketplace} />
                  </td>
                  <td>{i.after ? <Offer side={i.after} marketplace={o.marketplace} /> : <span class="muted">unchanged</span>}</td>
                  <td>
                    <StatusBadge status={i.state} />
                    {i.reason && <span class="small"> {i.reason}</span>}
                  </td>
                </tr>
              ))}
            </DataTable>
          </>
        )}
      </Async>
    </Page>
  )
}
