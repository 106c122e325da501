import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import type { ReconciliationAnswer, ReconciliationSettings, ReconciliationSettingsBody } from '../lib/api-types'
import { MARKETPLACES, type Marketplace, dateTime, marketplaceName } from '../lib/format'
import { href } from '../lib/router'
import { useIdempotency, useResource } from '../lib/resource'
import { can } from '../lib/session'
import { Form, TextField, useForm } from '../ui/form'
import { Page, Section } from '../ui/layout'
import { Money } from '../ui/money'
import { Async, DataTable, Empty, More } from '../ui/states'

/**
 * Payouts reconciled (docs/marketplaces.md "Payouts reconciled"): per UTC day and machine, what
 * gpuhq accrued, the platform's commission, what the platform should therefore have paid, what it
 * reports, and the gap the commission does not explain; rows past the owner's threshold are flagged.
 * Beside them, the platform's payout history (Vast invoices) and wallet balances (Clore).
 */

type Row = ReconciliationAnswer['items'][number]

const Signed = ({ usd }: { usd: string | null }) =>
  usd !== null && !usd.startsWith('-') && Number(usd) !== 0 ? (
    <>
      +<Money usd={usd} />
    </>
  ) : (
    <Money usd={usd} />
  )

const SOURCE: Record<string, string> = { entered: 'your rate', published_default: 'published rate', unknown: 'not known' }

function Threshold({ settings, saved }: { settings: ReconciliationSettings; saved: () => void }) {
  const form = useForm()
  const idem = useIdempotency()
  const [value, setValue] = useState(settings.gap_threshold_usd)
  const [done, setDone] = useState(false)
  if (!can('admin'))
    return (
      <p>
        Flag a day when the platform paid more than <Money usd={settings.gap_threshold_usd} /> less than expected.
      </p>
    )
  return (
    <Form
      form={form}
      label="Payout gap threshold"
      submit="Save the threshold"
      busyLabel="Saving…"
      onSubmit={async () => {
        setDone(false)
        const body: ReconciliationSettingsBody = { gap_threshold_usd: value.trim() }
        await request('PUT', '/reconciliation/settings', { body, idempotencyKey: idem.keyFor(body), ifMatch: `"${settings.version}"` })
        idem.done()
        setDone(true)
        saved()
      }}
    >
      <TextField
        form={form}
        name="/gap_threshold_usd"
        label="Flag a machine-day short by more than (USD)"
        hint="Per machine and day, after the commission. 0 flags any shortfall; the default is 1.00."
        inputMode="decimal"
        value={value}
        onInput={setValue}
      />
      {done && (
        <p class="note" role="status">
          Saved.
        </p>
      )}
    </Form>
  )
}

function Rows({ rows }: { rows: Row[] }) {
  return (
    <DataTable
      label="Reconciliation per day and machine"
      head={
        <>
          <th scope="col">Day</th>
          <th scope="col">Machine</th>
          <th scope="col">Marketplace</th>
          <th scope="col">Accrued</th>
          <th scope="col">Commission</th>
          <th scope="col">Expected</th>
          <th scope="col">Platform paid</th>
          <th scope="col">Unexplained gap</th>
          <th scope="col">Status</th>
        </>
      }
    >
      {rows.map((r) => (
        <tr key={`${r.day}:${r.server_id}:${r.marketplace}`} class={r.flagged ? 'flagged' : undefined} data-flagged={r.flagged ? 'true' : 'false'}>
          <td>{r.day}</td>
          <td>
            <a href={href(`/servers/${r.server_id}`)}>{r.server_name}</a>
          </td>
          <td>{marketplaceName(r.marketplace)}</td>
          <td>
            <Money usd={r.accrued_usd} />
          </td>
          <td>
            <Money usd={r.commission_usd} empty="not known" />
            <span class="muted small">
              {' '}
              {r.commission_percent === null ? '' : `${r.commission_percent} %, `}
              {SOURCE[r.commission_source]}
            </span>
          </td>
          <td>
            <Money usd={r.expected_usd} />
          </td>
          <td>
            <Money usd={r.platform_usd} empty={r.marketplace === 'marketplace_b' ? 'no report' : 'not reported'} />
          </td>
          <td>
            <Signed usd={r.unexplained_usd} />
          </td>
          <td>{r.flagged ? <span class="badge bad">Flagged: paid less</span> : r.closed ? <span class="muted">ok</span> : <span class="muted">today</span>}</td>
        </tr>
      ))}
    </DataTable>
  )
}

export function ReconciliationPage() {
  const [days, setDays] = useState(7)
  const [marketplace, setMarketplace] = useState<Marketplace | ''>('')
  // `days` counts back from the service's today (its clock), not the browser's.
  const query = { days, ...(marketplace ? { marketplace } : {}) }
  const rec = useResource(() => get<ReconciliationAnswer>('/reconciliation', query), [days, marketplace])
  const settings = useResource(() => get<ReconciliationSettings>('/reconciliation/settings'), [])
  const more = async (cursor: string) => {
    const next = await get<ReconciliationAnswer>('/reconciliation', { ...query, cursor })
    if (rec.data) rec.set({ ...rec.data, items: [...rec.data.items, ...next.items], next_cursor: next.next_cursor })
  }
  return (
    <Page
      title="Payouts reconciled"
      actions={
        <>
          <label>
            Days{' '}
            <select value={days} onChange={(e) => setDays(Number(e.currentTarget.value))}>
              {[7, 14, 30, 90].map((d) => (
                <option key={d} value={d}>
                  {d}
                </option>
              ))}
            </select>
          </label>{' '}
          <label>
            Marketplace{' '}
            <select value={marketplace} onChange={(e) => setMarketplace(e.currentTarget.value as Marketplace | '')}>
              <option value="">All</option>
              {(Object.keys(MARKETPLACES) as Marketplace[]).map((m) => (
                <option key={m} value={m}>
                  {MARKETPLACES[m]}
                </option>
              ))}
            </select>
          </label>
        </>
      }
    >
      <p class="muted small">
        Per day and machine: what your rentals accrued, the platform's commission, what the platform should therefore have paid, and what it reports. A closed
        day the platform paid less than expected by more than your threshold is flagged and raises a payout_gap alert. Clore publishes no earnings per machine:
        its rows show the commission only, and its wallet balances are listed below.
      </p>
      <Async r={rec} label="Loading the reconciliation…">
        {(a) => (
          <>
            <Section title="Summary">
              <dl class="facts">
                <dt>Accrued</dt>
                <dd>
                  <Money usd={a.totals.accrued_usd} />
                </dd>
                <dt>Commission</dt>
                <dd>
                  <Money usd={a.totals.commission_usd} empty="not known" />
                </dd>
                <dt>Platform paid (reported days)</dt>
                <dd>
                  <Money usd={a.totals.platform_usd} /> of <Money usd={a.totals.reported_expected_usd} /> expected
                </dd>
                <dt>Unexplained gap</dt>
                <dd>
                  <Signed usd={a.totals.unexplained_usd} />
                </dd>
                <dt>Flagged machine-days</dt>
                <dd>{a.totals.flagged_rows}</dd>
              </dl>
              <p class="muted small">{a.total_label}</p>
            </Section>
            <Section title="Days and machines">
              {a.items.length === 0 ? (
                <Empty>Nothing accrued or reported in these days.</Empty>
              ) : (
                <>
                  <Rows rows={a.items} />
                  <More cursor={a.next_cursor} load={more} />
                </>
              )}
            </Section>
            <Section title="Payouts and wallets">
              {a.payouts.length === 0 && a.wallets.length === 0 ? (
                <Empty>No payout history or wallet balance read in these days.</Empty>
              ) : (
                <DataTable
                  label="Payouts and wallets"
                  head={
                    <>
                      <th scope="col">Day</th>
                      <th scope="col">Marketplace</th>
                      <th scope="col">What</th>
                      <th scope="col">Amount</th>
                    </>
                  }
                >
                  {a.payouts.map((p) => (
                    <tr key={`p:${p.marketplace}:${p.id}`}>
                      <td>{p.day}</td>
                      <td>{marketplaceName(p.marketplace)}</td>
                      <td>
                        {p.type}
                        {p.description ? `: ${p.description}` : ''}
                      </td>
                      <td>
                        <Signed usd={p.amount_usd} />
                      </td>
                    </tr>
                  ))}
                  {a.wallets.map((w) => (
                    <tr key={`w:${w.marketplace}:${w.currency}:${w.day}`}>
                      <td>{w.day}</td>
                      <td>{marketplaceName(w.marketplace)}</td>
                      <td>
                        Wallet {w.currency} <span class="muted small">(read {dateTime(w.observed_at)})</span>
                      </td>
                      <td>
                        {w.balance} {w.currency}
                        {w.usd !== null && (
                          <>
                            {' '}
                            (<Money usd={w.usd} />)
                          </>
                        )}
                      </td>
                    </tr>
                  ))}
                </DataTable>
              )}
            </Section>
          </>
        )}
      </Async>
      <Section title="Threshold">
        <Async r={settings}>{(s) => <Threshold settings={s} saved={() => (settings.reload(), rec.reload())} />}</Async>
      </Section>
      <p class="muted small">
        The commission comes from the <a href={href('/earnings')}>cost basis</a>; the alert is on the <a href={href('/alerts')}>alerts</a> page.
      </p>
    </Page>
  )
}
