import { linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { agentFileName, buildAgent, type AgentTarget } from '../../scripts/build-agent'

/**
 * The agent as one executable, built by scripts/build-agent.ts for this machine's architecture
 * once per version and source state: a build lives in the system temp directory and is reused
 * while agent/ and protocol/ are unchanged (the build checks their hash), so the tests that need
 * the executable cost a compile only after the agent's sources change.
 */
export const HOST_TARGET: AgentTarget = process.arch === 'arm64' ? 'linux-arm64' : 'linux-x64'

export type BuiltAgent = { file: string; sha256: string; version: string; bytes: number }

export async function builtAgent(version?: string): Promise<BuiltAgent> {
  const out = join(tmpdir(), `gpuhq-agent-build-${version ?? 'source'}`)
  const { manifest, failed } = await buildAgent({ out, targets: [HOST_TARGET], version })
  const entry = manifest.files[HOST_TARGET]
  if (!entry) throw new Error(`building the agent failed: ${failed.map((f) => f.reason).join('; ')}`)
  return { file: join(out, entry.file), sha256: entry.sha256, version: manifest.version, bytes: entry.bytes }
}

/**
 * A directory the service serves as AGENT_BIN_DIR holding `agent` (hard-linked, not copied: 100 MiB)
 * as this machine's build, with the manifest and checksum file scripts/build-agent.ts writes.
 */
export function serveDir(dir: string, agent: { file: string; sha256: string; version: string; bytes: number }): void {
  mkdirSync(dir, { recursive: true })
  const name = agentFileName(HOST_TARGET)
  rmSync(join(dir, name), { force: true })
  linkSync(agent.file, join(dir, name))
  writeFileSync(join(dir, `${name}.sha256`), `${agent.sha256}  ${name}\n`)
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify({ version: agent.version, source: 'test', files: { [HOST_TARGET]: { file: name, sha256: agent.sha256, bytes: agent.bytes } } }),
  )
}
