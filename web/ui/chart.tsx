import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import { theme } from '../lib/theme'

/**
 * One time-series chart drawn by uPlot (canvas; thousands of points per series stay fast). The
 * figure says in words what the lines show (range and latest values) for screen readers, since a
 * canvas has no text of its own.
 */

// Distinguishable in both themes, and never the only cue: the legend names each line.
const PALETTE = ['#2563eb', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2', '#65a30d', '#dc2626']

export type ChartSeries = { label: string; values: (number | null)[] }

const tick = (v: number, unit: string) => `${Math.abs(v) >= 10_000 ? `${Math.round(v / 100) / 10}k` : Math.round(v * 10) / 10}${unit}`

/** `prefix` goes before a tick's value ("$"), `unit` after it (" °C"); `bars` draws each point as a bar (a total per period). */
export function Chart(props: {
  title: string
  unit: string
  prefix?: string
  bars?: boolean
  times: number[]
  series: ChartSeries[]
  from: number
  to: number
}) {
  const { title, unit, prefix = '', bars = false, times, series, from, to } = props
  const box = useRef<HTMLDivElement>(null)
  const mode = theme.value
  useEffect(() => {
    const el = box.current
    if (!el) return
    const css = getComputedStyle(document.documentElement)
    const text = css.getPropertyValue('--text').trim() || '#000'
    const grid = css.getPropertyValue('--chart-grid').trim() || 'rgba(0,0,0,.1)'
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } }
    const width = () => Math.max(240, el.clientWidth)
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        series: [
          {},
          ...series.map((s, i) => ({
            label: s.label,
            stroke: PALETTE[i % PALETTE.length],
            width: 1.5,
            spanGaps: false,
            // A sparse series (a new server) is drawn as dots: a lone bucket has no line to draw.
            points: { show: !bars && times.length < 60, size: 5 },
            ...(bars
              ? { fill: `${PALETTE[i % PALETTE.length]}99`, paths: uPlot.paths.bars?.({ size: [0.8 / Math.max(1, series.length), 60], align: 1 }) }
              : {}),
          })),
        ],
        axes: [axis, { ...axis, values: (_u: uPlot, ticks: number[]) => ticks.map((v) => `${prefix}${tick(v, unit)}`), size: 70 }],
        // The range asked for, not just the buckets there are: a new server's data sits at the right.
        scales: { x: { time: true, range: () => [from, to] } },
        cursor: { drag: { x: true, y: false } },
      },
      [times, ...series.map((s) => s.values)] as uPlot.AlignedData,
      el,
    )
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 220 }))
    resize.observe(el)
    return () => {
      resize.disconnect()
      plot.destroy()
    }
  }, [times, series, unit, prefix, bars, mode, from, to])
  const latest = series
    .map((s) => {
      const last = [...s.values].reverse().find((v) => v !== null)
      return last === undefined || last === null ? null : `${s.label} ${prefix}${Math.round(last * 100) / 100}${unit}`
    })
    .filter(Boolean)
  const summary = `${title}: ${series.length} series over ${times.length} points${latest.length ? `; latest ${latest.join(', ')}` : ''}`
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={summary} />
    </figure>
  )
}
