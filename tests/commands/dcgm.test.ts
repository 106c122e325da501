import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { enroll } from '../../agent/lib/enroll'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { type AgentHandle, startAgent } from '../../agent/lib/session'
import { freePort, startTestApp, type TestApp } from '../support/app'
import { commandWhen, issue } from '../support/commands'
import { fakeDcgmi } from '../support/dcgmi'
import { api, eventually, getServer, mintInitToken, newOwner, ok, type Owner } from '../support/fleet'

/**
 * Issue 39, diagnostics on demand: `diagnostics.dcgm` sent through the real service to the
 * reference agent over its real WebSocket, on a host whose nvidia-smi and dcgmi are fakes replaying
 * real output (tests/agent/captures/): the per-GPU verdict is stored in the command's result; a
 * host without DCGM fails the command with the reason; a rented server holds it until the rental ends.
 */

const SMI_CAPTURE = join(import.meta.dir, '../agent/captures/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt')
const FAKE_SMI = join(import.meta.dir, '../agent/fake-nvidia-smi.ts')

let app: TestApp
let owner: Owner
let dir: string
const agents: AgentHandle[] = []

beforeAll(async () => {
  // The agent connects to the WebSocket address enrolment names, which PUBLIC_URL makes: the app's own port.
  const port = freePort()
  app = await startTestApp({ PUBLIC_URL: `http://localhost:${port}`, LOG_LEVEL: 'silent' }, { port })
  owner = await newOwner(app, 'dcgm', 'pro')
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-dcgm-'))
})
afterAll(async () => {
  for (const a of agents) await a.stop()
  await app.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A real-mode agent (fake nvidia-smi replaying an H100) enrolled and connected, with `dcgmi` as given. */
async function hostWith(name: string, dcgmi: string): Promise<string> {
  const home = join(dir, name)
  mkdirSync(home, { recursive: true })
  const nvidiaSmi = join(home, 'nvidia-smi')
  writeFileSync(nvidiaSmi, `#!/bin/sh\nFAKE_NVIDIA_SMI_CAPTURE='${SMI_CAPTURE}' exec '${process.execPath}' '${FAKE_SMI}' "$@"\n`, { mode: 0o755 })
  const stateDir = join(home, 'state')
  const { token } = await mintInitToken(app, owner)
  const facts = await new Machine({ stateDir, nvidiaSmi }).facts()
  const credential = await enroll({ url: app.url, token, stateDir, facts, log: memoryLogger() })
  const kernelLog = join(home, 'journalctl')
  writeFileSync(kernelLog, '#!/bin/sh\nexec sleep 600\n', { mode: 0o755 })
  agents.push(
    await startAgent({ stateDir, log: memoryLogger(), nvidiaSmi, dcgmi, kernelLogCommand: [kernelLog], heartbeatIntervalS: 1, telemetryIntervalS: 5 }),
  )
  return credential.server_id
}

describe('diagnostics.dcgm through the service', () => {
  test('with dcgmi on the host, the command succeeds and its result holds each GPU’s verdict', async () => {
    const fake = fakeDcgmi(mkdtempSync(join(dir, 'bin-')), { capture: 'dcgm-4.4.2__diag-r2__1gpu-pass.txt' })
    const server = await hostWith('with-dcgm', fake.bin)
    await eventuallyOnline(server)
    const c = await issue(app, owner, server, 'diagnostics.dcgm', { level: 2 })
    expect(c.requires).toBe('none')
    const done = await commandWhen(app, owner, c.command_id, (x) => x.execution_status === 'succeeded' || x.execution_status === 'failed')
    expect(done.execution_status).toBe('succeeded')
    expect(fake.calls()).toEqual(['diag -r 2'])
    expect(done.result).toMatchObject({ level: 2, simulated: false, dcgm_version: '4.4.2', result: 'pass', passed: true })
    expect(done.result.gpus).toEqual([
      {
        index: 0,
        result: 'pass',
        tests: [
          { name: 'software', result: 'pass' },
          { name: 'memory', result: 'pass' },
          { name: 'pcie', result: 'pass' },
        ],
        warnings: [],
      },
    ])
  }, 60_000)

  test('without DCGM the command fails saying so', async () => {
    const server = await hostWith('without-dcgm', join(dir, 'nowhere', 'dcgmi'))
    await eventuallyOnline(server)
    const c = await issue(app, owner, server, 'diagnostics.dcgm', {})
    const done = await commandWhen(app, owner, c.command_id, (x) => x.execution_status === 'succeeded' || x.execution_status === 'failed')
    expect(done).toMatchObject({ execution_status: 'failed', result: null, error: { code: 'dcgm_not_installed', retryable: false } })
    expect(done.error.message).toContain('DCGM is not installed')
  }, 60_000)

  test('during a rental it waits for the rental to end, like the other dangerous commands; a level the catalogue does not know is 422', async () => {
    const server = (await getServer(app, owner, (await ok<{ items: { id: string }[] }>(await api(app, owner, 'GET', '/servers'))).items[0]!.id)).id
    await ok(await api(app, owner, 'PATCH', `/servers/${server}`, { json: { rental_active: true } }))
    const c = await issue(app, owner, server, 'diagnostics.dcgm', { level: 1 })
    expect(c).toMatchObject({ requires: 'after_rental', delivery_status: 'queued', queue_reason: 'awaiting_rental_end' })
    const bad = await api(app, owner, 'POST', '/commands', { json: { server_id: server, type: 'diagnostics.dcgm', params: { level: 3 } } })
    expect(bad.status).toBe(422)
    expect(JSON.stringify(await bad.json())).toContain('/params/level')
  })
})

/** The agent's session is up (its first heartbeat made the server online). */
async function eventuallyOnline(server: string): Promise<void> {
  await eventually(async () => (await getServer(app, owner, server)).presence === 'online' || null)
}
