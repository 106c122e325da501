import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { MARKETPLACES, type Marketplace, marketplaceName, utcDay } from '../lib/format'
import { href } from '../lib/router'
import { useIdempotency, useResource } from '../lib/resource'
import { can } from '../lib/session'
import type { CostBasis, CostBasisPatch, EarningsReport, Margin, MarginReport, MarketplaceEarnings } from '../lib/api-types'
import { Form, TextField, useForm } from '../ui/form'
import { Money, Price } from '../ui/money'
import { Page, Section } from '../ui/layout'
import { Async, DataTable, Empty, TableWrap } from '../ui/states'

/**
 * Earnings and costs (docs/earnings.md, docs/reports.md): what the marketplaces report as earned
 * (their numbers, not a ledger: every total carries the service's label), the margin after the
 * platforms' cut, electricity and gpuhq's charges, and the cost basis those figures use.
 */

const hours = (s: number) => `${Math.round(s / 360) / 10} h`

type Rec = Reconciliation['total']
/** GET /marketplaces/earnings' `reconciliation` (docs/earnings.md): gross, the platform's cut, net, and the platforms' own figure beside gpuhq's on the same days. */
type Reconciliation = MarketplaceEarnings['reconciliation']

/** A signed amount: "+$1.25" or "−$1.25". */
const Signed = ({ usd }: { usd: string | null }) =>
  usd !== null && !usd.startsWith('-') && Number(usd) !== 0 ? (
    <>
      +<Money usd={usd} />
    </>
  ) : (
    <Money usd={usd} />
  )

function ReconciliationTable({ rec }: { rec: Reconciliation }) {
  // The captions are the API's (`reconciliation.labels`): the console keeps no copy of its words.
  const label = (k: string) => rec.labels[k] ?? k
  const cols = [rec.total, ...rec.by_marketplace]
  const rates = (r: Rec) => r.cut_rates.map((c) => `${c.percent === null ? '?' : `${c.percent} %`} on ${c.currency}: ${label(c.source)}`).join('; ')
  const row = (k: string, cell: (r: Rec) => ComponentChildren) => (
    <tr>
      <th scope="row">{label(k)}</th>
      {cols.map((r) => (
        <td class="num" key={r.marketplace ?? 'all'}>
          {cell(r)}
        </td>
      ))}
    </tr>
  )
  return (
    <DataTable
      label="Earned against reported"
      head={
        <>
          <th scope="col">Figure</th>
          {cols.map((r) => (
            <th scope="col" class="num" key={r.marketplace ?? 'all'}>
              {r.marketplace ? marketplaceName(r.marketplace) : 'All marketplaces'}
            </th>
          ))}
        </>
      }
    >
      {row('gross_usd', (r) => (
        <Money usd={r.gross_usd} />
      ))}
      {row('platform_cut_usd', (r) => (
        <>
          <Money usd={r.platform_cut_usd} empty="unknown" />
          {r.cut_rates.length > 0 && <div class="muted small">{rates(r)}</div>}
        </>
      ))}
      {row('net_usd', (r) => (
        <Money usd={r.net_usd} empty="unknown" />
      ))}
      {row('reported.platform_usd', (r) => (r.reported.rows === 0 ? <span class="muted">not reported</span> : <Money usd={r.reported.platform_usd} />))}
      {row('reported.net_usd', (r) => (r.reported.rows === 0 ? '—' : <Money usd={r.reported.net_usd} empty="unknown" />))}
      {row('reported.difference_usd', (r) => (r.reported.rows === 0 ? '—' : <Signed usd={r.reported.difference_usd} />))}
    </DataTable>
  )
}

function EarningsTable({ r, rec }: { r: EarningsReport; rec: Reconciliation | undefined }) {
  if (r.servers.length === 0) return <Empty>No earnings in this period. They accrue while a linked machine is rented.</Empty>
  return (
    <>
      {rec ? (
        <>
          <dl class="tiles" aria-label="Earnings">
            <div class="tile">
              <dt>{rec.labels.gross_usd ?? 'gross_usd'}</dt>
              <dd>
                <Money usd={rec.total.gross_usd} />
              </dd>
            </div>
            <div class="tile">
              <dt>{rec.labels.platform_cut_usd ?? 'platform_cut_usd'}</dt>
              <dd>
                <Money usd={rec.total.platform_cut_usd} empty="unknown" />
              </dd>
            </div>
            <div class="tile">
              <dt>{rec.labels.net_usd ?? 'net_usd'}</dt>
              <dd>
                <Money usd={rec.total.net_usd} empty="unknown" />
              </dd>
            </div>
            <div class="tile">
              <dt>Rented time</dt>
              <dd>{hours(r.total.accrued_seconds)}</dd>
            </div>
          </dl>
          <h3>Against what the platforms report</h3>
          <p class="muted small">
            The platforms report their own figure after their cut, and only for some days (marketplace B never does). It is compared with gpuhq’s estimate after
            the cut on those same days only.
          </p>
          <ReconciliationTable rec={rec} />
        </>
      ) : (
        <dl class="tiles" aria-label="Earnings">
          <div class="tile">
            <dt>Earned ({r.total_label})</dt>
            <dd>
              <Money usd={r.total.earned_usd} />
            </dd>
          </div>
          <div class="tile">
            <dt>Reported by the platforms (after their cut, on the days they reported)</dt>
            <dd>
              <Money usd={r.total.platform_reported_usd} empty="not reported" />
            </dd>
          </div>
          <div class="tile">
            <dt>Rented time</dt>
            <dd>{hours(r.total.accrued_seconds)}</dd>
          </div>
        </dl>
      )}
      <h3>By server</h3>
      <TableWrap label="Earnings by server">
        <table>
          <caption class="muted small">{r.total_label}</caption>
          <thead>
            <tr>
              <th scope="col">Server</th>
              <th scope="col">Model</th>
              <th scope="col" class="num">
                Rented
              </th>
              <th scope="col" class="num">
                Earned
              </th>
              <th scope="col" class="num">
                Reported (after the cut)
              </th>
            </tr>
          </thead>
          <tbody>
            {r.servers.map((s) => (
              <tr key={s.server_id}>
                <td>{s.name}</td>
                <td>{s.gpu_model ?? '—'}</td>
                <td class="num">{hours(s.accrued_seconds)}</td>
                <td class="num">
                  <Money usd={s.earned_usd} />
                </td>
                <td class="num">
                  <Money usd={s.platform_reported_usd} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      <h3>By marketplace</h3>
      <ul>
        {r.by_marketplace.map((m) => (
          <li key={m.marketplace}>
            {marketplaceName(m.marketplace)}: <Money usd={m.earned_usd} /> from {m.servers} servers
          </li>
        ))}
      </ul>
    </>
  )
}

function MarginTable({ r }: { r: MarginReport }) {
  const rows: [string, Margin][] = [['Fleet', r.fleet], ...r.servers.map((s): [string, Margin] => [s.name, s])]
  return (
    <TableWrap label="Margin">
      <table>
        <caption class="muted small">
          {r.from_day} to {r.to_day}. A figure with a missing input is left out and marked, never counted as zero.
        </caption>
        <thead>
          <tr>
            <th scope="col">Of</th>
            <th scope="col" class="num">
              Earned
            </th>
            <th scope="col" class="num">
              Platform cut
            </th>
            <th scope="col" class="num">
              Electricity
            </th>
            <th scope="col" class="num">
              gpuhq
            </th>
            <th scope="col" class="num">
              Margin
            </th>
            <th scope="col">Missing</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([name, m]) => (
            <tr key={name}>
              <th scope="row">{name}</th>
              <td class="num">
                <Money usd={m.earned_usd} />
              </td>
              <td class="num">
                <Money usd={m.platform_cut_usd} empty="unknown" />
              </td>
              <td class="num">
                <Money usd={m.electricity_usd} empty="unknown" />
              </td>
              <td class="num">
                <Money usd={m.gpuhq_charges_usd} />
              </td>
              <td class="num">
                <Money usd={m.margin_usd} />
                {m.estimate ? ' (estimate)' : ''}
              </td>
              <td>{m.missing.join(', ') || '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  )
}

/**
 * The margin leaves the operational cost out (docs/earnings.md "Margin"): a host who entered one
 * reads, beside the margin, that it is not taken from it, and what it comes to per server-day.
 */
function OperationalLeftOut({ basis }: { basis: CostBasis | null | undefined }) {
  const monthly = basis?.operational.usd_per_month
  if (!basis || !monthly) return null
  const spread = basis.operational.spread
  return (
    <p class="muted small" data-operational>
      Other operating costs (<Money usd={monthly} /> a month
      {spread ? (
        <>
          , <Money usd={spread.usd_per_server_day} /> per server-day this month
        </>
      ) : null}
      ) are not taken from this margin.
    </p>
  )
}

function CostBasisForm({ basis, saved }: { basis: CostBasis; saved: (b: CostBasis) => void }) {
  const form = useForm()
  const idem = useIdempotency()
  const [electricity, setElectricity] = useState(basis.electricity_usd_per_kwh ?? '')
  const [operational, setOperational] = useState(basis.operational.usd_per_month ?? '')
  const commission = (m: Marketplace) => basis.marketplaces.find((x) => x.marketplace === m)?.commission_percent ?? ''
  const [commissions, setCommissions] = useState<Record<Marketplace, string>>({
    marketplace_a: commission('marketplace_a'),
    marketplace_b: commission('marketplace_b'),
  })
  const [done, setDone] = useState(false)
  const orNull = (v: string) => v.trim() || null
  return (
    <Form
      form={form}
      label="Cost basis"
      submit="Save the cost basis"
      busyLabel="Saving…"
      onSubmit={async () => {
        setDone(false)
        const body: CostBasisPatch = {
          electricity_usd_per_kwh: orNull(electricity),
          operational: { usd_per_month: orNull(operational) },
          marketplaces: {
            marketplace_a: { commission_percent: orNull(commissions.marketplace_a) },
            marketplace_b: { commission_percent: orNull(commissions.marketplace_b) },
          },
        }
        const { data } = await request<CostBasis>('PUT', '/billing/cost-basis', { body, idempotencyKey: idem.keyFor(body), ifMatch: `"${basis.version}"` })
        idem.done()
        saved(data)
        setDone(true)
      }}
    >
      <TextField
        form={form}
        name="/electricity_usd_per_kwh"
        label="Electricity (USD per kWh)"
        hint="Empty: not entered (a server's own tariff wins)."
        inputMode="decimal"
        value={electricity}
        onInput={setElectricity}
      />
      <TextField
        form={form}
        name="/operational/usd_per_month"
        label="Other operating costs (USD per month)"
        inputMode="decimal"
        value={operational}
        onInput={setOperational}
      />
      {(Object.keys(MARKETPLACES) as Marketplace[]).map((m) => (
        <TextField
          key={m}
          form={form}
          name={`/marketplaces/${m}/commission_percent`}
          label={`${MARKETPLACES[m]} commission (%)`}
          inputMode="decimal"
          value={commissions[m]}
          onInput={(v) => setCommissions({ ...commissions, [m]: v })}
        />
      ))}
      {done && (
        <p class="note" role="status">
          Saved.
        </p>
      )}
    </Form>
  )
}

export function EarningsPage() {
  const [days, setDays] = useState(7)
  const earnings = useResource(() => get<EarningsReport>('/reports/earnings', { from: utcDay(days - 1), to: utcDay(0) }), [days])
  // The reconciliation (gross, cut, net, the platforms' figure beside gpuhq's) where the service gives one.
  const rec = useResource(
    () =>
      get<{ reconciliation?: Reconciliation }>('/marketplaces/earnings', { days }).then(
        (e) => e.reconciliation ?? null,
        () => null,
      ),
    [days],
  )
  const margin = useResource(() => get<MarginReport>('/reports/margin', { days }), [days])
  const basis = useResource(() => get<CostBasis>('/billing/cost-basis'), [])
  return (
    <Page
      title="Earnings"
      actions={
        <div class="field">
          <label for="earnings-days">Period</label>
          <select id="earnings-days" value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
            <option value="7">Last 7 days</option>
            <option value="30">Last 30 days</option>
            <option value="90">Last 90 days</option>
          </select>
        </div>
      }
    >
      <Section title="Earned">
        <Async r={earnings} label="Loading the earnings…">
          {(r) => <EarningsTable r={r} rec={rec.data ?? undefined} />}
        </Async>
      </Section>
      <p>
        <a href={href('/reconciliation')}>Payouts reconciled</a>: per day and machine, what the platform paid beside what the rentals accrued after its
        commission, with the days it paid short flagged.
      </p>
      <Section title="Margin">
        <Async r={margin} label="Loading the margin…">
          {(r) => <MarginTable r={r} />}
        </Async>
        <OperationalLeftOut basis={basis.data} />
      </Section>
      <Section title="Cost basis">
        <Async r={basis} label="Loading the cost basis…">
          {(b) => (
            <>
              {can('admin') ? (
                <CostBasisForm basis={b} saved={basis.set} />
              ) : (
                <p>
                  Electricity <Price usd={b.electricity_usd_per_kwh} empty="not entered" /> per kWh.
                </p>
              )}
              {b.defaults.length > 0 && (
                <>
                  <h3>Used where nothing is entered</h3>
                  <ul>
                    {b.defaults.map((d) => (
                      <li key={d.key}>
                        <code>{d.key}</code> {d.value}: {d.reason}
                      </li>
                    ))}
                  </ul>
                </>
              )}
            </>
          )}
        </Async>
      </Section>
    </Page>
  )
}
