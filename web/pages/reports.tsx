import type { JSX } from 'preact'
import { useMemo, useState } from 'preact/hooks'
import { get, type Query } from '../lib/api'
import { marketplaceName, utcDay } from '../lib/format'
import { useResource } from '../lib/resource'
import { href } from '../lib/router'
import type { EarningsReport, Margin, MarginReport, SpendReport, UtilisationReport } from '../lib/api-types'
import { Chart, type ChartSeries } from '../ui/chart'
import { Page, Section } from '../ui/layout'
import { Money } from '../ui/money'
import { Async, DataTable, Empty, Loading } from '../ui/states'

/**
 * Reports (docs/reports.md, docs/console.md "Reports"): the four reports of GET /reports/{name}
 * over a range of days, grouped by day, week or month: a chart of the periods, the periods and the
 * servers as tables, and the API's own CSV (exact figures, as sent) to download.
 */

type Period = Pick<Utilisation['periods'][number], 'period' | 'from' | 'to' | 'from_at' | 'to_at'>
type Range = Pick<Utilisation, 'report' | 'from' | 'to' | 'days' | 'group_by' | 'timezone' | 'from_at' | 'to_at'>

type Utilisation = UtilisationReport
type Earnings = EarningsReport
type Spend = SpendReport
type MarginR = MarginReport

const REPORTS = {
  utilisation: 'Utilisation',
  earnings: 'Earnings',
  spend: 'Spend',
  margin: 'Margin',
} as const
type ReportName = keyof typeof REPORTS

const pct = (share: number | null) => (share === null ? '—' : `${Math.round(share * 1000) / 10} %`)
const hours = (s: number) => `${Math.round(s / 360) / 10} h`
/** A wire amount as a number, for drawing only: every figure shown in words stays the decimal string. */
const plotted = (usd: string | null) => (usd === null ? null : Number(usd))

function PeriodChart({
  title,
  periods,
  series,
  prefix = '',
  unit = '',
}: {
  title: string
  periods: Period[]
  series: ChartSeries[]
  prefix?: string
  unit?: string
}) {
  const times = periods.map((p) => Date.parse(p.from_at) / 1000)
  if (times.length === 0) return null
  const last = Date.parse(periods[periods.length - 1]!.to_at) / 1000
  return <Chart title={title} unit={unit} prefix={prefix} bars={series.length === 1} times={times} series={series} from={times[0]!} to={last} />
}

function UtilisationView({ r }: { r: Utilisation }) {
  const series = useMemo(
    () => [
      { label: 'Online', values: r.periods.map((p) => (p.uptime_share === null ? null : p.uptime_share * 100)) },
      { label: 'Rented', values: r.periods.map((p) => (p.rented_share === null ? null : p.rented_share * 100)) },
      { label: 'GPU utilisation', values: r.periods.map((p) => p.gpu_utilisation_pct) },
    ],
    [r],
  )
  return (
    <>
      <dl class="tiles" aria-label="Fleet over the range">
        <Tile label="Online">{pct(r.fleet.uptime_share)}</Tile>
        <Tile label="Rented">{pct(r.fleet.rented_share)}</Tile>
        <Tile label="GPU utilisation">{r.fleet.gpu_utilisation_pct === null ? '—' : `${r.fleet.gpu_utilisation_pct} %`}</Tile>
        <Tile label="Rented time">{hours(r.fleet.rented_seconds)}</Tile>
      </dl>
      <PeriodChart title="Online, rented and GPU utilisation (%)" periods={r.periods} series={series} unit=" %" />
      <DataTable
        label="Utilisation by period"
        head={
          <>
            <th scope="col">Period</th>
            <Num>Online</Num>
            <Num>Rented</Num>
            <Num>GPU utilisation</Num>
            <Num>Rented time</Num>
          </>
        }
      >
        {r.periods.map((p) => (
          <tr key={p.period}>
            <td>{p.period}</td>
            <td class="num">{pct(p.uptime_share)}</td>
            <td class="num">{pct(p.rented_share)}</td>
            <td class="num">{p.gpu_utilisation_pct === null ? '—' : `${p.gpu_utilisation_pct} %`}</td>
            <td class="num">{hours(p.rented_seconds)}</td>
          </tr>
        ))}
      </DataTable>
      <h3>By server</h3>
      <DataTable
        label="Utilisation by server"
        head={
          <>
            <th scope="col">Server</th>
            <th scope="col">GPUs</th>
            <Num>Online</Num>
            <Num>Rented</Num>
            <Num>GPU utilisation</Num>
          </>
        }
      >
        {r.servers.map((s) => (
          <tr key={s.server_id}>
            <ServerCell id={s.server_id} name={s.name} />
            <td>
              {s.gpu_count} × {s.gpu_model ?? '—'}
            </td>
            <td class="num">{pct(s.uptime_share)}</td>
            <td class="num">{pct(s.rented_share)}</td>
            <td class="num">{s.gpu_utilisation_pct === null ? '—' : `${s.gpu_utilisation_pct} %`}</td>
          </tr>
        ))}
      </DataTable>
    </>
  )
}

function EarningsView({ r }: { r: Earnings }) {
  const series = useMemo(
    () => [
      { label: 'Earned (before the cut)', values: r.periods.map((p) => plotted(p.earned_usd)) },
      { label: 'Reported by the platforms', values: r.periods.map((p) => plotted(p.platform_reported_usd)) },
    ],
    [r],
  )
  return (
    <>
      <dl class="tiles" aria-label="Earnings over the range">
        <Tile label="Earned (before the cut)">
          <Money usd={r.total.earned_usd} />
        </Tile>
        <Tile label="Reported by the platforms">
          <Money usd={r.total.platform_reported_usd} empty="not reported" />
        </Tile>
        <Tile label="Rented time">{hours(r.total.accrued_seconds)}</Tile>
      </dl>
      <p class="muted small">
        {r.total_label}. Earned: gpuhq's count of price × time of running rentals, before the platforms' cut. Reported: the platforms' own figure, after their
        cut, on the days they reported one (see <a href={href('/earnings')}>Earnings</a> for the two side by side).
      </p>
      <PeriodChart title="Earnings per period (USD)" periods={r.periods} series={series} prefix="$" />
      <DataTable
        label="Earnings by period"
        head={
          <>
            <th scope="col">Period</th>
            <Num>Earned</Num>
            <Num>Reported</Num>
            <Num>Rented time</Num>
          </>
        }
      >
        {r.periods.map((p) => (
          <tr key={p.period}>
            <td>{p.period}</td>
            <td class="num">
              <Money usd={p.earned_usd} />
            </td>
            <td class="num">
              <Money usd={p.platform_reported_usd} />
            </td>
            <td class="num">{hours(p.accrued_seconds)}</td>
          </tr>
        ))}
      </DataTable>
      <h3>By marketplace</h3>
      <DataTable
        label="Earnings by marketplace"
        head={
          <>
            <th scope="col">Marketplace</th>
            <Num>Servers</Num>
            <Num>Earned</Num>
            <Num>Reported</Num>
          </>
        }
      >
        {r.by_marketplace.map((m) => (
          <tr key={m.marketplace}>
            <td>{marketplaceName(m.marketplace)}</td>
            <td class="num">{m.servers}</td>
            <td class="num">
              <Money usd={m.earned_usd} />
            </td>
            <td class="num">
              <Money usd={m.platform_reported_usd} />
            </td>
          </tr>
        ))}
      </DataTable>
      <h3>By server</h3>
      <DataTable
        label="Earnings by server"
        head={
          <>
            <th scope="col">Server</th>
            <th scope="col">Model</th>
            <Num>Earned</Num>
            <Num>Reported</Num>
            <Num>Rented time</Num>
          </>
        }
      >
        {r.servers.map((s) => (
          <tr key={s.server_id}>
            <ServerCell id={s.server_id} name={s.name} />
            <td>{s.gpu_model ?? '—'}</td>
            <td class="num">
              <Money usd={s.earned_usd} />
            </td>
            <td class="num">
              <Money usd={s.platform_reported_usd} />
            </td>
            <td class="num">{hours(s.accrued_seconds)}</td>
          </tr>
        ))}
      </DataTable>
    </>
  )
}

function SpendView({ r }: { r: Spend }) {
  const series = useMemo(() => [{ label: 'Spend', values: r.periods.map((p) => plotted(p.spend_usd)) }], [r])
  return (
    <>
      <dl class="tiles" aria-label="Spend over the range">
        <Tile label="Spend">
          <Money usd={r.total.spend_usd} />
        </Tile>
        <Tile label="Of it, charges">
          <Money usd={r.total.charges_usd} />
        </Tile>
        <Tile label="Top-ups">
          <Money usd={r.total.topups_usd} />
        </Tile>
        <Tile label="Server-hours">{r.total.server_hours}</Tile>
      </dl>
      <p class="muted small">gpuhq's own charges and adjustments, by the days of your time zone ({r.timezone}), as the spend tiles of Billing count them.</p>
      <PeriodChart title="Spend per period (USD)" periods={r.periods} series={series} prefix="$" />
      <DataTable
        label="Spend by period"
        head={
          <>
            <th scope="col">Period</th>
            <Num>Charges</Num>
            <Num>Adjustments</Num>
            <Num>Spend</Num>
            <Num>Top-ups</Num>
            <Num>Server-hours</Num>
          </>
        }
      >
        {r.periods.map((p) => (
          <tr key={p.period}>
            <td>{p.period}</td>
            <td class="num">
              <Money usd={p.charges_usd} />
            </td>
            <td class="num">
              <Money usd={p.adjustments_usd} />
            </td>
            <td class="num">
              <Money usd={p.spend_usd} />
            </td>
            <td class="num">
              <Money usd={p.topups_usd} />
            </td>
            <td class="num">{p.server_hours}</td>
          </tr>
        ))}
      </DataTable>
      <h3>Charges by server</h3>
      <DataTable
        label="Charges by server"
        head={
          <>
            <th scope="col">Server</th>
            <Num>Server-hours</Num>
            <Num>Charges</Num>
          </>
        }
      >
        {r.servers.map((s) => (
          <tr key={s.server_id}>
            <ServerCell id={s.server_id} name={s.name} />
            <td class="num">{s.server_hours}</td>
            <td class="num">
              <Money usd={s.charges_usd} />
            </td>
          </tr>
        ))}
      </DataTable>
    </>
  )
}

function MarginRow({ label, m, id }: { label: string; m: Margin; id?: string }) {
  return (
    <tr>
      {id ? <ServerCell id={id} name={label} /> : <td>{label}</td>}
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
        {m.estimate && <span class="muted small"> (estimate)</span>}
      </td>
    </tr>
  )
}

function MarginView({ r }: { r: MarginR }) {
  const series = useMemo(
    () => [
      { label: 'Earned', values: r.periods.map((p) => plotted(p.earned_usd)) },
      { label: 'Margin', values: r.periods.map((p) => plotted(p.margin_usd)) },
    ],
    [r],
  )
  const head = (
    <>
      <th scope="col">Of</th>
      <Num>Earned</Num>
      <Num>Platform cut</Num>
      <Num>Electricity</Num>
      <Num>gpuhq</Num>
      <Num>Margin</Num>
    </>
  )
  return (
    <>
      <dl class="tiles" aria-label="Margin over the range">
        <Tile label="Earned">
          <Money usd={r.fleet.earned_usd} />
        </Tile>
        <Tile label="Margin">
          <Money usd={r.fleet.margin_usd} />
        </Tile>
      </dl>
      {r.fleet.missing.length > 0 && <p class="note">An estimate: {r.fleet.missing.join(', ')} missing, left out (never counted as zero).</p>}
      <PeriodChart title="Earned and margin per period (USD)" periods={r.periods} series={series} prefix="$" />
      <DataTable label="Margin by period" head={head}>
        {r.periods.map((p) => (
          <MarginRow key={p.period} label={p.period} m={p} />
        ))}
      </DataTable>
      <h3>By server</h3>
      <DataTable label="Margin by server" head={head}>
        {r.servers.map((s) => (
          <MarginRow key={s.server_id} id={s.server_id} label={s.name} m={s} />
        ))}
      </DataTable>
    </>
  )
}

const Num = ({ children }: { children: string }) => (
  <th scope="col" class="num">
    {children}
  </th>
)
const Tile = ({ label, children }: { label: string; children: JSX.Element | string | number }) => (
  <div class="tile">
    <dt>{label}</dt>
    <dd>{children}</dd>
  </div>
)
const ServerCell = ({ id, name }: { id: string; name: string }) => (
  <td>
    <a class="name" href={href(`/servers/${id}`)}>
      {name}
    </a>
  </td>
)

const VIEWS: { [K in ReportName]: (props: { r: never }) => JSX.Element } = {
  utilisation: UtilisationView,
  earnings: EarningsView,
  spend: SpendView,
  margin: MarginView,
}

export function ReportsPage() {
  const [report, setReport] = useState<ReportName>('earnings')
  const [from, setFrom] = useState(utcDay(29))
  const [to, setTo] = useState(utcDay(0))
  const [groupBy, setGroupBy] = useState('day')
  const query: Query = { from, to, group_by: groupBy }
  const data = useResource(() => get<unknown>(`/reports/${report}`, query), [report, from, to, groupBy])
  const csv = `/api/v1/reports/${report}?${new URLSearchParams({ from, to, group_by: groupBy, format: 'csv' })}`
  const View = VIEWS[report] as (props: { r: unknown }) => JSX.Element
  return (
    <Page title="Reports">
      <div class="form inline report-controls">
        <fieldset class="segmented">
          <legend class="visually-hidden">Report</legend>
          {(Object.keys(REPORTS) as ReportName[]).map((k) => (
            <button key={k} type="button" aria-pressed={report === k} onClick={() => setReport(k)}>
              {REPORTS[k]}
            </button>
          ))}
        </fieldset>
        <div class="field">
          <label for="report-from">From</label>
          <input id="report-from" type="date" value={from} max={to} onChange={(e) => e.currentTarget.value && setFrom(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="report-to">To</label>
          <input id="report-to" type="date" value={to} min={from} onChange={(e) => e.currentTarget.value && setTo(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="report-group">Per</label>
          <select id="report-group" value={groupBy} onChange={(e) => setGroupBy(e.currentTarget.value)}>
            <option value="day">Day</option>
            <option value="week">Week</option>
            <option value="month">Month</option>
          </select>
        </div>
        <a class="button" href={csv} download={`gpuhq-${report}-${from}-${to}.csv`}>
          Download CSV
        </a>
      </div>
      <Section title={REPORTS[report]}>
        <Async r={data} label="Loading the report…">
          {(r) => {
            const range = r as Range & { report: string }
            // Right after another report is picked, the last answer is still the previous report's.
            if (range.report !== report) return <Loading label="Loading the report…" />
            return (
              <>
                <p class="muted small">
                  {range.from} to {range.to} ({range.days} days, counted in {range.timezone}).
                </p>
                {(r as { periods: unknown[] }).periods.length === 0 ? <Empty>Nothing in this range.</Empty> : <View r={r} />}
              </>
            )
          }}
        </Async>
      </Section>
    </Page>
  )
}
