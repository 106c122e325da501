import { useMemo, useState } from 'preact/hooks'
import { get } from '../lib/api'
import { useResource } from '../lib/resource'
import type { MetricsSnapshot } from '../lib/api-types'
import { Chart, type ChartSeries } from '../ui/chart'
import { Section } from '../ui/layout'
import { Async, Empty } from '../ui/states'

/** Metric charts of one server over 24 h, 7 d or 30 d (docs/telemetry.md): the bucket average per GPU. */

type Metrics = MetricsSnapshot
type Series = Metrics['series'][number]

const RANGES = { '24h': 24, '7d': 24 * 7, '30d': 24 * 30 } as const
type Range = keyof typeof RANGES

const CHARTS: { metric: string; title: string; unit: string }[] = [
  { metric: 'temperature_c', title: 'GPU temperature', unit: ' °C' },
  { metric: 'utilization_pct', title: 'GPU utilisation', unit: ' %' },
  { metric: 'power_w', title: 'GPU power', unit: ' W' },
  { metric: 'fan_pct', title: 'Fan speed', unit: ' %' },
  { metric: 'memory_used_mb', title: 'GPU memory used', unit: ' MB' },
  { metric: 'cpu_usage_pct', title: 'Host CPU', unit: ' %' },
]

/** The series of one metric on a shared time axis (seconds), null where a bucket is missing. */
function align(series: Series[]): { times: number[]; lines: ChartSeries[] } {
  const times = [...new Set(series.flatMap((s) => s.points.map((p) => Date.parse(p.t) / 1000)))].sort((a, b) => a - b)
  const index = new Map(times.map((t, i) => [t, i]))
  const lines = series.map((s) => {
    const values: (number | null)[] = new Array(times.length).fill(null)
    for (const p of s.points) values[index.get(Date.parse(p.t) / 1000)!] = p.avg
    return { label: s.scope === 'gpu' ? `GPU ${s.gpu_index}` : 'Host', values }
  })
  return { times, lines }
}

export function ServerCharts({ serverId }: { serverId: string }) {
  const [range, setRange] = useState<Range>('24h')
  const metrics = useResource(() => {
    const to = new Date()
    const from = new Date(to.getTime() - RANGES[range] * 3600_000)
    return get<Metrics>(`/servers/${serverId}/metrics`, { from: from.toISOString(), to: to.toISOString(), metric: CHARTS.map((c) => c.metric) })
  }, [serverId, range])
  const charts = useMemo(
    () =>
      CHARTS.map((c) => ({ ...c, ...align((metrics.data?.series ?? []).filter((s) => s.metric === c.metric && s.points.length > 0)) })).filter(
        (c) => c.times.length > 0,
      ),
    [metrics.data],
  )
  return (
    <Section
      title="Metrics"
      actions={
        <div class="actions">
          <fieldset class="segmented" aria-label="Range">
            {(Object.keys(RANGES) as Range[]).map((r) => (
              <button type="button" key={r} aria-pressed={range === r} onClick={() => setRange(r)}>
                {r === '24h' ? '24 hours' : r === '7d' ? '7 days' : '30 days'}
              </button>
            ))}
          </fieldset>
          <button type="button" onClick={metrics.reload}>
            Refresh
          </button>
        </div>
      }
    >
      <Async r={metrics} label="Loading the metrics…">
        {(m) =>
          charts.length === 0 ? (
            <Empty>No measurements in this range yet. They appear once the agent has sent telemetry and the 5-minute rollup has run.</Empty>
          ) : (
            <>
              <p class="muted small">
                Average per {m.resolution === '1h' ? 'hour' : '5 minutes'}, {new Date(m.from).toLocaleString()} to {new Date(m.to).toLocaleString()}.
              </p>
              <div class="charts">
                {charts.map((c) => (
                  <Chart
                    key={c.metric}
                    title={c.title}
                    unit={c.unit}
                    times={c.times}
                    series={c.lines}
                    from={Date.parse(m.from) / 1000}
                    to={Date.parse(m.to) / 1000}
                  />
                ))}
              </div>
            </>
          )
        }
      </Async>
    </Section>
  )
}
