import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ALL_SCOPES } from '../../src/platform/access'
import { call, mintPat, newTenant, setPlan } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { familiesOf, parseExposition, promtool } from './exposition'

/**
 * What docs/prometheus.md and docs/grafana/gpuhq-fleet.json promise, held to the endpoint: the
 * dashboard imports (Grafana's JSON model, a DS_PROMETHEUS input) and every panel's query parses
 * as PromQL and names only metrics the endpoint exports; the scrape configuration is one Prometheus
 * loads; the page's metric table is exactly what the endpoint exports.
 */

const REPO = join(import.meta.dir, '../..')
// Read afresh for every test: this Bun's toMatchObject can rewrite what it matched an asymmetric
// matcher against (an array matched with expect.any(Array) came back as {}).
const dashboard = () => JSON.parse(readFileSync(join(REPO, 'docs/grafana/gpuhq-fleet.json'), 'utf8'))
const PAGE = readFileSync(join(REPO, 'docs/prometheus.md'), 'utf8')

type Panel = {
  id: number
  type: string
  title: string
  datasource?: { type: string; uid: string }
  panels?: Panel[]
  targets?: { expr: string; refId: string }[]
}

let app: TestApp
let exported: string[]
let dir: string
let token: string

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  const owner = await newTenant(app, 'prom-docs')
  await setPlan(app, owner.tenantId, 'pro')
  token = (await mintPat(app, owner, { scopes: ALL_SCOPES })).token
  // Every family has its HELP and TYPE even without a sample: an empty fleet names them all.
  const res = await call(app, 'GET', '/metrics/prometheus', token)
  expect(res.status).toBe(200)
  exported = familiesOf(parseExposition(await res.text()))
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-prom-docs-'))
}, 60_000)
afterAll(async () => {
  await app.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Every panel, rows' nested panels included, without the rows themselves. */
function panelsOf(list: Panel[]): Panel[] {
  return list.flatMap((p) => (p.type === 'row' ? panelsOf(p.panels ?? []) : [p]))
}
const metricsIn = (expr: string) => [...expr.matchAll(/\bgpuhq_[a-z0-9_]+/g)].map((m) => m[0])

describe('the Grafana dashboard', () => {
  test("is Grafana's dashboard JSON model, schemaVersion 39 or later, importing with a Prometheus data source input", () => {
    const DASHBOARD = dashboard()
    expect(DASHBOARD.schemaVersion).toBeGreaterThanOrEqual(39)
    expect({ title: DASHBOARD.title, uid: DASHBOARD.uid, id: DASHBOARD.id }).toEqual({ title: 'gpuhq fleet', uid: 'gpuhq-fleet', id: null })
    expect(Array.isArray(DASHBOARD.templating.list)).toBe(true)
    expect(DASHBOARD.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })])
    expect(DASHBOARD.__requires).toContainEqual(expect.objectContaining({ type: 'datasource', id: 'prometheus' }))
    const panels = panelsOf(DASHBOARD.panels)
    const ids = (DASHBOARD.panels as Panel[]).flatMap((p) => [p.id, ...(p.panels ?? []).map((x) => x.id)])
    expect(new Set(ids).size).toBe(ids.length)
    for (const p of panels) {
      expect({ panel: p.title, datasource: p.datasource }).toEqual({ panel: p.title, datasource: { type: 'prometheus', uid: '${DS_PROMETHEUS}' } })
      expect({ panel: p.title, hasTargets: (p.targets?.length ?? 0) > 0 }).toEqual({ panel: p.title, hasTargets: true })
    }
    // Every panel type it uses is declared, so an import says what it needs.
    for (const type of new Set(panels.map((p) => p.type))) expect(DASHBOARD.__requires).toContainEqual(expect.objectContaining({ type: 'panel', id: type }))
  })

  test('every panel names only metrics the endpoint exports, and together they show what the issue asks for', () => {
    const DASHBOARD = dashboard()
    const used = new Set<string>()
    const unknown: string[] = []
    for (const p of panelsOf(DASHBOARD.panels))
      for (const t of p.targets!) {
        const names = metricsIn(t.expr)
        expect({ panel: p.title, expr: t.expr, namesAMetric: names.length > 0 }).toEqual({ panel: p.title, expr: t.expr, namesAMetric: true })
        for (const n of names) {
          used.add(n)
          if (!exported.includes(n)) unknown.push(`${p.title}: ${n}`)
        }
      }
    expect(unknown).toEqual([])
    for (const needed of [
      'gpuhq_server_online', // fleet online
      'gpuhq_gpu_temperature_celsius',
      'gpuhq_gpu_utilization_ratio',
      'gpuhq_gpu_power_watts',
      'gpuhq_server_rental_running',
      'gpuhq_earnings_accrued_today_usd',
      'gpuhq_balance_usd',
      'gpuhq_balance_time_left_seconds',
    ])
      expect(used).toContain(needed)
    expect(DASHBOARD.templating.list[0].query.query).toBe('label_values(gpuhq_server_online, name)')
  })

  test('every query parses as PromQL (promtool check rules, the variables filled in)', () => {
    const DASHBOARD = dashboard()
    const exprs = panelsOf(DASHBOARD.panels).flatMap((p) => p.targets!.map((t) => t.expr))
    const rules = {
      groups: [{ name: 'dashboard', rules: exprs.map((expr, i) => ({ record: `dashboard:query_${i}`, expr: expr.replaceAll('$server', '.*') })) }],
    }
    const file = join(dir, 'dashboard-rules.yml')
    writeFileSync(file, JSON.stringify(rules)) // JSON is YAML
    const checked = promtool(['check', 'rules', file])
    expect({ code: checked.code, output: checked.output }).toMatchObject({ code: 0 })
    expect(checked.output).toContain(`${exprs.length} rules found`)
  })
})

describe('docs/prometheus.md', () => {
  test('its metric table lists exactly the families the endpoint exports', () => {
    const listed = [...PAGE.matchAll(/^\| `(gpuhq_[a-z0-9_]+)` \|/gm)].map((m) => m[1]!).sort()
    expect(listed).toEqual(exported)
  })

  test('its scrape configuration is one Prometheus loads, and its token file and path reach the endpoint', async () => {
    const yaml = /```yaml\n([\s\S]*?)```/.exec(PAGE)![1]!
    expect(yaml).toContain('metrics_path: /api/v1/metrics/prometheus')
    expect(yaml).toContain('scrape_interval: 15s')
    expect(yaml).toMatch(/authorization:\n\s+type: Bearer\n\s+credentials_file: /)
    // promtool checks that the token file exists: the same configuration, with a real file.
    const tokenFile = join(dir, 'gpuhq-token')
    writeFileSync(tokenFile, token)
    const config = join(dir, 'prometheus.yml')
    writeFileSync(config, yaml.replace('/etc/prometheus/gpuhq-token', tokenFile))
    const checked = promtool(['check', 'config', config])
    expect({ code: checked.code, output: checked.output }).toMatchObject({ code: 0 })
    expect(checked.output).toContain('SUCCESS')
    // What Prometheus sends with that file: the token as a bearer credential, at that path.
    const res = await fetch(`${app.url}/api/v1/metrics/prometheus`, { headers: { authorization: `Bearer ${readFileSync(tokenFile, 'utf8')}` } })
    expect(res.status).toBe(200)
  })
})
