import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { enroll } from '../../agent/lib/enroll'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { type AgentHandle, startAgent } from '../../agent/lib/session'
import { expectAccessible, expectClean, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'
import { mintInitToken, type Owner } from '../support/fleet'

/**
 * The server page's "Hardware and health" section (docs/console.md, docs/agent.md "Facts"): the
 * reference agent runs against the fake nvidia-smi replaying a real H100 (tests/agent/captures/)
 * and a journalctl stand-in that prints a real Xid 79 line; the page shows the driver, CUDA, the
 * PCIe link against its maximum, the power limits, the modes and the Xid.
 */

const CAPTURE = join(import.meta.dir, '../agent/captures/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt')
const FAKE = join(import.meta.dir, '../agent/fake-nvidia-smi.ts')

let c: ConsoleSession
let owner: Owner
let dir: string
let agent: AgentHandle | null = null

beforeAll(async () => {
  c = await startConsole()
  owner = await signedInOwner(c)
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-console-hw-'))
}, 120_000)
afterAll(async () => {
  await agent?.stop()
  await c?.close()
  rmSync(dir, { recursive: true, force: true })
})

test('an H100 shows its driver, CUDA, PCIe link, power limits, modes and the Xid the kernel logged', async () => {
  const nvidiaSmi = join(dir, 'nvidia-smi')
  writeFileSync(nvidiaSmi, `#!/bin/sh\nFAKE_NVIDIA_SMI_CAPTURE='${CAPTURE}' exec '${process.execPath}' '${FAKE}' "$@"\n`, { mode: 0o755 })
  const journal = join(dir, 'journalctl')
  writeFileSync(journal, `#!/bin/sh\necho 'NVRM: Xid (PCI:0000:00:09): 79, pid=0, GPU has fallen off the bus.'\nexec sleep 60\n`, { mode: 0o755 })
  const stateDir = join(dir, 'state')
  const { token } = await mintInitToken(c.app, owner)
  const facts = await new Machine({ stateDir, nvidiaSmi }).facts()
  const credential = await enroll({ url: c.origin, token, stateDir, facts, log: memoryLogger() })
  agent = await startAgent({ stateDir, log: memoryLogger(), nvidiaSmi, kernelLogCommand: [journal], heartbeatIntervalS: 1, telemetryIntervalS: 1 })

  const { page } = c
  await open(c, `/servers/${credential.server_id}`, /.+/)
  const section = page.locator('section', { has: page.getByRole('heading', { name: 'Hardware and health' }) })
  await section.waitFor({ timeout: WAIT })
  await section.locator('dd', { hasText: '590.48.01' }).waitFor({ timeout: WAIT })
  await section.locator('dd', { hasText: '13.1' }).waitFor({ timeout: WAIT })
  // The readings arrive with the first telemetry frame, the Xid as an event: the live refresh shows both.
  await section.locator('td', { hasText: 'gen 5 ×16 of gen 5 ×16' }).waitFor({ timeout: WAIT })
  await section.locator('.badge', { hasText: 'Xid 79' }).waitFor({ timeout: WAIT })
  const row = await section.locator('tbody tr').first().innerText()
  expect(row).toContain('700 W (200–700 W)')
  expect(row).toContain('on / on / off')
  expect(row).toContain('96.00.A5.00.01')
  expect(row).not.toContain('degraded')
  await expectAccessible(c, 'server-hardware')
  expectClean(c)
}, 120_000)

test('the Xid makes the server not ready: the Readiness section says which check fails and why, and the fleet’s Readiness column says so too', async () => {
  const { page } = c
  const section = page.locator('section', { has: page.getByRole('heading', { name: 'Readiness' }) })
  await section.waitFor({ timeout: WAIT })
  const xid = section.locator('[data-marketplace="marketplace_a"] tr[data-item="gpu.xid"]')
  await xid.locator('[data-status], .badge', { hasText: 'fail' }).first().waitFor({ timeout: WAIT })
  expect(await xid.getAttribute('data-status')).toBe('fail')
  expect(await xid.innerText()).toContain('Xid 79')
  // The facts the agent measured pass, from the agent (not linked: no platform view).
  expect(await section.locator('[data-marketplace="marketplace_a"] tr[data-item="cuda.version"]').getAttribute('data-status')).toBe('pass')
  expect(await section.locator('[data-marketplace="marketplace_a"]').getAttribute('data-readiness')).toBe('not_ready')
  await open(c, '/', /.+/)
  const cell = page.locator('a[data-readiness]').first()
  await cell.waitFor({ timeout: WAIT })
  expect(await cell.getAttribute('data-readiness')).toBe('not_ready')
  expect(await cell.innerText()).toContain('gpu.xid')
  await expectAccessible(c, 'fleet-readiness')
  expectClean(c)
}, 120_000)
