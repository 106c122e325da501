import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { freePort, startTestApp, type TestApp } from '../support/app'
import { commandWhen, issue } from '../support/commands'
import { api, eventually, getServer, mintInitToken, newOwner, ok, serverEvents, stopApp, type Owner, type ServerEvent } from '../support/fleet'
import { builtAgent, type BuiltAgent, HOST_TARGET, serveDir } from './agent-binary'

/**
 * Self-update of the single executable, with real processes: the agent built as 1.0.0 and as
 * 1.1.0 (scripts/build-agent.ts, cached), installed in a host directory, run by a stand-in for
 * systemd (start the unit's command again on exit 75), against the real service serving 1.1.0.
 * Every wait is on an event the service records.
 */

let app: TestApp
let owner: Owner
let current: BuiltAgent
let next: BuiltAgent
let served: string
const dirs: string[] = []
const running: { stop: () => Promise<void> }[] = []

beforeAll(async () => {
  current = await builtAgent()
  next = await builtAgent('1.1.0')
  served = mkdtempSync(join(tmpdir(), 'gpuhq-agent-served-'))
  dirs.push(served)
  serveDir(served, next)
  const port = freePort()
  app = await startTestApp({ AGENT_BIN_DIR: served, PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' }, { port })
  owner = await newOwner(app, 'selfupdate', 'pro')
}, 120_000)
afterAll(async () => {
  for (const r of running) await r.stop()
  await stopApp(app)
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A host as install.sh leaves it: the executable in opt/, enrolled into state/. */
async function host() {
  const root = mkdtempSync(join(tmpdir(), 'gpuhq-agent-host-'))
  dirs.push(root)
  mkdirSync(join(root, 'opt'))
  const file = join(root, 'opt', 'gpuhq-agent')
  copyFileSync(current.file, file)
  chmodSync(file, 0o755)
  const state = join(root, 'state')
  const t = await mintInitToken(app, owner)
  writeFileSync(join(root, 'token'), t.token, { mode: 0o600 })
  // Not spawnSync: the service answering the enrolment runs in this process.
  const enrol = Bun.spawn([file, 'enroll', '--url', app.url, '--token-file', join(root, 'token'), '--state-dir', state, '--simulate', '2'], {
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const [code, err] = await Promise.all([enrol.exited, new Response(enrol.stderr).text()])
  expect({ code, err }).toEqual({ code: 0, err: expect.any(String) })
  const serverId = (JSON.parse(readFileSync(join(state, 'credential.json'), 'utf8')) as { server_id: string }).server_id
  return { root, file, state, serverId }
}

/** What systemd does with the unit: run ExecStart, and run it again when it exits 75 (Restart=always). */
function supervise(file: string, args: string[], logFile: string) {
  const exits: number[] = []
  let proc: Subprocess
  let stopping = false
  const start = () => {
    proc = Bun.spawn([file, ...args], { env: { PATH: '/usr/bin:/bin' }, stdin: 'ignore', stdout: Bun.file(logFile), stderr: Bun.file(logFile) })
    void proc.exited.then((code) => {
      exits.push(code)
      if (!stopping && code === 75) start()
    })
  }
  start()
  const handle = {
    exits,
    stop: async () => {
      stopping = true
      proc.kill('SIGTERM')
      await proc.exited
    },
  }
  running.push(handle)
  return handle
}

async function eventOf(serverId: string, kind: string, timeoutMs = 60_000): Promise<ServerEvent> {
  return eventually(async () => (await serverEvents(app, owner, serverId, { limit: '100' })).items.find((e) => e.kind === kind) ?? null, timeoutMs, 100)
}

async function setRental(serverId: string, active: boolean) {
  await ok(await api(app, owner, 'PATCH', `/servers/${serverId}`, { json: { rental_active: active } }))
}

function versionOf(file: string): string {
  return Bun.spawnSync([file, 'version']).stdout.toString().trim()
}

describe('self-update of the single executable', () => {
  test('offered while rented it waits; when the rental ends it updates, reconnects and reports the new version; a version that cannot connect is rolled back', async () => {
    const h = await host()
    await setRental(h.serverId, true)
    const agent = supervise(h.file, ['run', '--state-dir', h.state, '--update-trial-s', '60'], join(h.root, 'agent.log'))

    // Offered at hello, while rented: the command waits for the rental's end.
    const offered = await eventOf(h.serverId, 'agent.update.offered')
    expect(offered.data).toMatchObject({ from_version: current.version, to_version: next.version })
    const commandId = offered.data!.command_id as string
    const waiting = await commandWhen(app, owner, commandId, (c) => c.queue_reason === 'awaiting_rental_end')
    expect(waiting).toMatchObject({ type: 'agent.update', params: { version: next.version }, requires: 'after_rental', delivery_status: 'queued' })
    expect((await getServer(app, owner, h.serverId)).agent_version).toBe(current.version)
    expect(versionOf(h.file)).toBe(current.version)

    // The rental ends: download, verify, swap, trial, restart into 1.1.0.
    await setRental(h.serverId, false)
    const completed = await eventOf(h.serverId, 'agent.update.completed')
    expect(completed.data).toMatchObject({ from_version: current.version, to_version: next.version, sha256: next.sha256 })
    const kinds = (await serverEvents(app, owner, h.serverId, { limit: '100' })).items.map((e) => e.kind)
    for (const k of ['agent.update.verified', 'agent.update.installed']) expect(kinds).toContain(k)
    expect(await commandWhen(app, owner, commandId, (c) => c.execution_status === 'succeeded', 30_000)).toMatchObject({
      result: { from_version: current.version, version: next.version, restarting: true },
    })
    const server = await eventually(async () => {
      const s = await getServer(app, owner, h.serverId)
      return s.presence === 'online' && s.agent_version === next.version ? s : null
    }, 30_000)
    expect(server.agent_version).toBe(next.version)
    expect(versionOf(h.file)).toBe(next.version)
    expect(versionOf(`${h.file}.previous`)).toBe(current.version)
    expect(agent.exits).toEqual([75])

    // A release that cannot connect (it answers `version`, then its `run` fails), forced by the
    // owner during a rental (requires: none): tried, rolled back, recorded.
    writeFileSync(join(h.root, 'broken'), '#!/bin/sh\nif [ "$1" = version ]; then echo 1.2.0; exit 0; fi\necho "broken release" >&2\nexit 1\n')
    const broken = readFileSync(join(h.root, 'broken'))
    const brokenBuild = {
      file: join(h.root, 'broken'),
      sha256: new Bun.CryptoHasher('sha256').update(broken).digest('hex'),
      version: '1.2.0',
      bytes: broken.length,
    }
    serveDir(served, brokenBuild)
    await setRental(h.serverId, true)
    const forced = await issue(app, owner, h.serverId, 'agent.update', { version: '1.2.0' }, { requires: 'none' })
    const rolledBack = await eventOf(h.serverId, 'agent.update.rolled_back')
    expect(rolledBack).toMatchObject({ severity: 'error' })
    expect(rolledBack.data).toMatchObject({ from_version: next.version, to_version: '1.2.0', restored: true })
    expect(rolledBack.data!.reason).toContain('exited with 1')
    expect(await commandWhen(app, owner, forced.command_id, (c) => c.execution_status === 'succeeded')).toBeTruthy()
    expect(versionOf(h.file)).toBe(next.version)
    expect(readFileSync(`${h.file}.failed`)).toEqual(broken)
    // The old process stayed and reconnected: still 1.1.0, online, never restarted again.
    await eventually(async () => {
      const s = await getServer(app, owner, h.serverId)
      return s.presence === 'online' && s.agent_version === next.version
    }, 30_000)
    expect(agent.exits).toEqual([75])
    serveDir(served, next)
  }, 180_000)

  test('a release that starts but is never welcomed is rolled back once the trial bound passes', async () => {
    const h = await host()
    const script = '#!/bin/sh\nif [ "$1" = version ]; then echo 1.3.0; exit 0; fi\nexec sleep 600\n'
    writeFileSync(join(h.root, 'silent'), script)
    const body = Buffer.from(script)
    serveDir(served, { file: join(h.root, 'silent'), sha256: new Bun.CryptoHasher('sha256').update(body).digest('hex'), version: '1.3.0', bytes: body.length })
    try {
      const agent = supervise(h.file, ['run', '--state-dir', h.state, '--update-trial-s', '2'], join(h.root, 'agent.log'))
      const rolledBack = await eventOf(h.serverId, 'agent.update.rolled_back')
      expect(rolledBack.data).toMatchObject({ from_version: current.version, to_version: '1.3.0', restored: true })
      expect(rolledBack.data!.reason).toContain('not welcomed by the service within 2 s')
      expect(versionOf(h.file)).toBe(current.version)
      expect(agent.exits).toEqual([])
    } finally {
      serveDir(served, next)
    }
  }, 120_000)

  test('an update whose trial was cut short (the old process died) is undone at the next start, and the previous version reports it', async () => {
    const h = await host()
    // Rented: the service's own offer of 1.1.0 to the 1.0.0 that comes back waits, so nothing moves after the rollback.
    await setRental(h.serverId, true)
    // As the old process leaves the files just before its trial child is welcomed: new in place, previous kept, update.json at trial.
    copyFileSync(h.file, `${h.file}.previous`)
    copyFileSync(next.file, h.file)
    chmodSync(h.file, 0o755)
    writeFileSync(
      join(h.state, 'update.json'),
      JSON.stringify({ state: 'trial', from_version: current.version, to_version: next.version, sha256: next.sha256, at: new Date().toISOString() }),
      { mode: 0o600 },
    )
    const agent = supervise(h.file, ['run', '--state-dir', h.state], join(h.root, 'agent.log'))
    const rolledBack = await eventOf(h.serverId, 'agent.update.rolled_back')
    expect(rolledBack.data).toMatchObject({ from_version: current.version, to_version: next.version, restored: true })
    expect(rolledBack.data!.reason).toContain('interrupted')
    expect(agent.exits).toEqual([75])
    expect(versionOf(h.file)).toBe(current.version)
    expect(versionOf(`${h.file}.failed`)).toBe(next.version)
    expect((await getServer(app, owner, h.serverId)).agent_version).toBe(current.version)
  }, 120_000)

  test('a download that does not match its published SHA-256 is refused and nothing changes', async () => {
    const h = await host()
    serveDir(served, { ...next, sha256: 'f'.repeat(64) })
    try {
      const agent = supervise(h.file, ['run', '--state-dir', h.state], join(h.root, 'agent.log'))
      const failed = await eventOf(h.serverId, 'agent.update.failed')
      expect(failed.data).toMatchObject({ code: 'update_checksum_mismatch', to_version: next.version })
      const offered = await eventOf(h.serverId, 'agent.update.offered')
      const c = await commandWhen(app, owner, offered.data!.command_id as string, (x) => x.execution_status === 'failed')
      expect(c.error).toMatchObject({ code: 'update_checksum_mismatch' })
      expect(versionOf(h.file)).toBe(current.version)
      expect(existsSync(`${h.file}.new`)).toBe(false)
      expect(existsSync(`${h.file}.previous`)).toBe(false)
      expect(agent.exits).toEqual([])
    } finally {
      serveDir(served, next)
    }
  }, 120_000)
})

test('the target the tests build is this machine', () => {
  expect(HOST_TARGET).toBe(process.arch === 'arm64' ? 'linux-arm64' : 'linux-x64')
})
