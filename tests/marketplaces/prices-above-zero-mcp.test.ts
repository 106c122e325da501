import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceB, type MarketplaceBSim } from '../../scripts/sim/marketplace-b'
import { call, insertServer, type Member, newTenant, setPlan } from '../support/access'
import { freePort, startTestApp, type TestApp } from '../support/app'
import { enableAccess } from '../support/mcp'

/**
 * Issue 34, finding 4, through the AI-assistant gateway: an assistant allowed
 * `marketplaces.set_offer` could list a server for free on marketplace_b. The tool calls
 * PUT …/offer, so the one above-zero check answers it: a tool error naming the field, and nothing
 * sent to Clore (its simulator over real HTTP). The app listens where its PUBLIC_URL says, as the
 * gateway only answers requests addressed to it.
 */

const KEY_B = 'clore-zero-mcp-key-5f2e9a17c3'

let simB: MarketplaceBSim
let app: TestApp
let owner: Member
let server: string

beforeAll(async () => {
  simB = await startMarketplaceB({
    requestIntervalMs: 0,
    owners: {
      [KEY_B]: {
        label: 'zero',
        userId: 9,
        servers: [{ name: 'rig-b', id: 71, online: true, visibility: 'hidden', specs: { gpu: '1x NVIDIA GeForce RTX 3090' } }],
      },
    },
  })
  const port = freePort()
  app = await startTestApp({ MARKETPLACE_B_API_URL: simB.url, LOG_LEVEL: 'silent', PUBLIC_URL: `http://127.0.0.1:${port}` }, { port })
  owner = await newTenant(app, 'zero-mcp')
  await setPlan(app, owner.tenantId, 'pro')
  server = await insertServer(app, owner.tenantId, 'rig-b')
  expect((await call(app, 'PUT', '/marketplaces/marketplace_b', owner, { json: { api_key: KEY_B } })).status).toBe(200)
  const linked = await call(app, 'POST', '/marketplaces/links', owner, { json: { server_id: server, marketplace: 'marketplace_b', external_machine_id: '71' } })
  expect(linked.status).toBe(201)
})
afterAll(async () => {
  await app.close()
  await simB.stop()
})

type ToolResult = { isError?: boolean; content: { type: string; text: string }[] }

async function callTool(token: string, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const res = await app.fetch('/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' },
    json: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } },
  })
  expect(res.status).toBe(200)
  const text = await res.text()
  const line = text.split('\n').find((l) => l.startsWith('data: ')) ?? text
  return (JSON.parse(line.replace(/^data: /, '')) as { result: ToolResult }).result
}

describe('the AI tool marketplaces.set_offer', () => {
  test('a zero price is refused as a tool error naming the field, and nothing is published', async () => {
    const { token } = await enableAccess(app, owner, ['marketplaces.set_offer'])
    simB.clearRequests()
    const zero = await callTool(token, 'marketplaces.set_offer', {
      server_id: server,
      marketplace: 'marketplace_b',
      offer: { coin_prices: { 'USD-Blockchain': { on_demand: '0' } } },
    })
    expect(zero.isError).toBe(true)
    expect(zero.content[0]!.text).toContain('422')
    expect(zero.content[0]!.text).toContain('/coin_prices/USD-Blockchain/on_demand')
    expect(simB.requests.filter((r) => r.method === 'POST')).toEqual([])
    // A price above zero goes through the same tool.
    const priced = await callTool(token, 'marketplaces.set_offer', {
      server_id: server,
      marketplace: 'marketplace_b',
      offer: { coin_prices: { 'USD-Blockchain': { on_demand: '6.5' } } },
    })
    expect(priced.isError).toBeFalsy()
    expect(simB.requests.filter((r) => r.method === 'POST').map((r) => r.path)).toEqual(['/v1/set_server_settings'])
  })
})
