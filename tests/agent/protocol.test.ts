import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkServiceFrame, firstFrameError } from '#protocol'
import { enroll } from '../../agent/lib/enroll'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { startAgent } from '../../agent/lib/session'
import { FakeService, waitFor } from './fake-service'

/**
 * The agent checks every frame the service sends with the protocol's compiled checkers
 * (protocol/agent.ts, the ones the service and the test stand-in use): a frame that fails is
 * refused as the protocol refuses a malformed frame, dropped with the reason, the session open.
 */

let svc: FakeService
const dirs: string[] = []
beforeAll(() => {
  svc = new FakeService()
})
afterAll(async () => {
  await svc.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const command = (id: string, extra: Record<string, unknown> = {}) => ({
  type: 'command',
  command_id: id,
  command_type: 'diagnostics.run',
  schema_version: 1,
  params: {},
  requires: 'none',
  deadline: null,
  ...extra,
})

describe('frames from the service', () => {
  test('a malformed command frame is refused by the shared checker: never accepted nor run, the reason logged, the session stays open', async () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), 'gpuhq-agent-protocol-')), 'state')
    dirs.push(stateDir)
    const facts = await new Machine({ simulate: 1, stateDir }).facts()
    const cred = await enroll({ url: svc.url, token: svc.issueInitToken(), stateDir, facts, log: memoryLogger() })
    const log = memoryLogger()
    const agent = await startAgent({ stateDir, log, simulate: 1, reconnectBaseMs: 50, reconnectCapMs: 200 })
    try {
      const conn = await waitFor(() => svc.conns.find((c) => c.serverId === cred.server_id && c.frames.some((f) => f.type === 'heartbeat')))
      // A `requires` the protocol does not have, and a frame without its schema_version and params.
      const bad = [command('bad-requires', { requires: 'whenever' }), { type: 'command', command_id: 'bad-missing', command_type: 'reboot' }]
      for (const frame of bad) expect(checkServiceFrame.command.Check(frame)).toBe(false)
      for (const frame of bad) conn.ws.send(JSON.stringify(frame))
      conn.ws.send(JSON.stringify(command('good-after')))
      // Frames are handled in order: once the good one has finished, the bad ones were seen.
      await waitFor(() => conn.frames.find((f) => f.type === 'command.finished' && f.command_id === 'good-after'), 10_000, 'the valid command to finish')
      expect(conn.frames.filter((f) => String(f.command_id).startsWith('bad-'))).toEqual([])
      const refusals = log.lines.filter((l) => l.msg === 'ignoring a frame the protocol does not allow')
      expect(refusals.map((l) => [l.level, l.type, l.error])).toEqual(
        bad.map((frame) => ['warn', 'command', firstFrameError('command', checkServiceFrame.command.Errors(frame))]),
      )
      expect(refusals[0]!.error).toStartWith('command/requires')
      expect(conn.closed).toBe(false)
      expect(conn.refused).toEqual([])
    } finally {
      await agent.stop()
    }
  })
})
