import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { fitByLargestList } from '../../src/modules/mcp/fit'
import { TOOLS } from '../../src/modules/mcp/tools'
import { freePort, startTestApp, type TestApp } from '../support/app'
import { api, type Owner } from '../support/fleet'
import { BASE, feed, HOUR, MIN, newRig, rollup, setNow, stopApp, type Sample } from '../telemetry/helpers'

/**
 * Issue 36.4 and 34.8 (the MCP part): what the assistant gets back from a tool. metrics.query on a
 * server with eight GPUs and a day of samples: bounded (metrics, GPU, range, resolution, statistics),
 * its answer valid JSON within the 64 KiB reply with `structuredContent`, saying in `truncated`
 * what was left out; it offers only metric names the API accepts; a wrong argument is a field
 * error, never an internal message.
 */

const LIMIT = 64 * 1024
const GPUS = 8
let app: TestApp
let owner: Owner
let serverId: string
let token: string

beforeAll(async () => {
  const port = freePort()
  app = await startTestApp({ LOG_LEVEL: 'silent', PUBLIC_URL: `http://127.0.0.1:${port}` }, { port })
  await setNow(app, BASE + 24 * HOUR)
  const rig = await newRig(app, { gpus: GPUS })
  owner = rig.owner
  serverId = rig.serverId
  const samples: Sample[] = []
  for (let t = BASE; t < BASE + 24 * HOUR; t += 5 * MIN) {
    for (let gpu = 0; gpu < GPUS; gpu++)
      samples.push({
        t,
        gpu,
        values: {
          temperature_c: 60 + gpu + (t % 7),
          memory_temperature_c: 70 + gpu,
          utilization_pct: 90 - gpu,
          power_w: 300.5 + gpu,
          fan_pct: 40 + gpu,
          memory_used_mb: 20000 + gpu,
          clock_sm_mhz: 2500,
        },
      })
    samples.push({ t, values: { cpu_usage_pct: 12.5, memory_used_pct: 34, disk_used_pct: 56, net_rx_mbps: 1.25, net_tx_mbps: 2.5 } })
  }
  await feed(rig.agent, samples)
  await rollup(app)
  const res = await api(app, owner, 'PUT', '/mcp/access', { json: { enabled: true, allowed_tools: ['metrics.query', 'fleet.get_server'] } })
  expect(res.status).toBe(200)
  token = ((await res.json()) as { token: string }).token
})
afterAll(() => stopApp(app))

type ToolResult = { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Record<string, any> }

let rpcId = 0
async function callTool(name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const res = await app.fetch('/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' },
    json: { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } },
  })
  expect(res.status).toBe(200)
  const text = await res.text()
  const line = text.split('\n').find((l) => l.startsWith('data: ')) ?? text
  const message = JSON.parse(line.replace(/^data: /, '')) as { result?: ToolResult; error?: unknown }
  expect(message.error).toBeUndefined()
  return message.result!
}

/** A successful answer as the issue asks: valid JSON text within the limit, the same object as structuredContent. */
function wellFormed(result: ToolResult) {
  expect(result.isError).toBeFalsy()
  const text = result.content[0]!.text
  expect(text.length).toBeLessThanOrEqual(LIMIT)
  const parsed = JSON.parse(text)
  expect(result.structuredContent).toEqual(parsed)
  return parsed
}

describe('metrics.query', () => {
  test('with its defaults: valid JSON within 64 KiB, structuredContent, the last 6 hours of three metrics, avg and max', async () => {
    const answer = wellFormed(await callTool('metrics.query', { server_id: serverId }))
    expect(new Set(answer.series.map((s: any) => s.metric))).toEqual(new Set(['temperature_c', 'utilization_pct', 'power_w']))
    expect(answer.stats).toEqual(['avg', 'max'])
    for (const s of answer.series) for (const p of s.points) expect(Object.keys(p)).toEqual(['t', 'avg', 'max'])
    expect(answer.from).toStartWith('2031-05-15T04:00:0')
  })

  test('a request too large for one reply keeps the newest points of every series and says what was left out', async () => {
    const metrics = ['temperature_c', 'memory_temperature_c', 'utilization_pct', 'power_w', 'fan_pct', 'memory_used_mb']
    const result = await callTool('metrics.query', {
      server_id: serverId,
      metrics,
      hours: 24,
      stats: ['min', 'max', 'avg', 'p50', 'p95', 'last'],
    })
    const answer = wellFormed(result)
    expect(answer.series.length).toBe(metrics.length * GPUS)
    const all = answer.truncated.points_per_series
    expect(all).toBeGreaterThanOrEqual(288)
    const shown = answer.truncated.points_shown_per_series
    expect(shown).toBeGreaterThan(0)
    expect(shown).toBeLessThan(all)
    for (const s of answer.series) {
      expect(s.points.length).toBe(shown)
      // The newest points: up to the bucket of now.
      expect(s.points.at(-1).t >= '2031-05-15T09:55:00.000000Z').toBe(true)
    }
    expect(answer.truncated.left_out).toContain('points before')
    expect(answer.truncated.narrow).toContain('gpu_index')
  })

  test('bounded by GPU, range and resolution, the whole answer fits and nothing is truncated', async () => {
    const answer = wellFormed(await callTool('metrics.query', { server_id: serverId, metrics: ['temperature_c'], gpu_index: 3, hours: 24, resolution: '1h' }))
    expect(answer.truncated).toBeUndefined()
    expect(answer.series.map((s: any) => [s.metric, s.gpu_index])).toEqual([['temperature_c', 3]])
    expect(answer.series[0].points.length).toBeGreaterThanOrEqual(24)
    expect(answer.resolution).toBe('1h')
  })

  test('offers only metric names the API accepts, and every one it offers is accepted', async () => {
    const schema = TOOLS.find((t) => t.name === 'metrics.query')!.input as any
    const names: string[] = schema.properties.metrics.items.anyOf.map((s: any) => s.const)
    expect(names).toContain('temperature_c')
    for (const name of names) {
      const res = await api(app, owner, 'GET', `/servers/${serverId}/metrics?metric=${name}`)
      expect({ name, status: res.status }).toEqual({ name, status: 200 })
    }
    const description = TOOLS.find((t) => t.name === 'metrics.query')!.description
    expect(description).not.toContain('gpu.')
  })

  test('a wrong argument is a field error the assistant can fix, never an internal message', async () => {
    const bad = await callTool('metrics.query', { server_id: serverId, metrics: ['gpu.temp'], resolution: 'raw' })
    expect(bad.isError).toBe(true)
    expect(bad.structuredContent).toMatchObject({ status: 422, code: 'validation_failed' })
    expect(bad.structuredContent!.errors.map((e: any) => e.path)).toEqual(expect.arrayContaining(['/metrics/0', '/resolution']))
    // A value the tool's schema lets through but the operation refuses: the operation's field errors.
    const range = await callTool('metrics.query', { server_id: serverId, from: '2031-05-15T00:00:00Z', to: '2031-05-14T00:00:00Z' })
    expect(range.isError).toBe(true)
    expect(range.structuredContent).toMatchObject({ status: 422, code: 'validation_failed', errors: [{ path: '/from', code: 'not_before_to' }] })
    for (const r of [bad, range]) {
      expect(r.content[0]!.text).not.toContain('undefined')
      expect(JSON.parse(r.content[0]!.text)).toEqual(r.structuredContent)
    }
  })
})

describe('any other tool', () => {
  test('an answer over the limit keeps the first items of its largest list, stays valid JSON and says what was left out', () => {
    const items = Array.from({ length: 400 }, (_, i) => ({ id: `${i}`.padStart(36, '0'), name: `rig-${i}`, notes: 'x'.repeat(300) }))
    const fitted = fitByLargestList({ items, next_cursor: 'abc' }, LIMIT)!
    const text = JSON.stringify(fitted)
    expect(text.length).toBeLessThanOrEqual(LIMIT)
    const kept = fitted.items as { id: string }[]
    expect(kept.length).toBeGreaterThan(100)
    expect(kept.map((x) => x.id)).toEqual(items.slice(0, kept.length).map((x) => x.id))
    expect(fitted.truncated).toMatchObject({ list: 'items', shown: kept.length, of: 400 })
    // One that fits is sent as it is.
    expect(fitByLargestList({ items: items.slice(0, 3) }, LIMIT)).toEqual({ items: items.slice(0, 3) })
  })
})
