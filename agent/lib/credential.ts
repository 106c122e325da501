import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic0600 } from './files'

export const DEFAULT_STATE_DIR = '/var/lib/gpuhq-agent'

/** What enrolment stores: the register answer plus the service URL (and the owner's port range). */
export type Credential = {
  url: string
  server_id: string
  agent_token: string
  ws_url: string
  heartbeat_interval_s: number
  telemetry_interval_s: number
  port_range?: string
  /** Enrolled with simulated GPUs: `run` simulates the same number unless told otherwise. */
  simulate?: number
  enrolled_at: string
}

export function credentialPath(stateDir: string): string {
  return join(stateDir, 'credential.json')
}

export function saveCredential(stateDir: string, credential: Credential): string {
  const path = credentialPath(stateDir)
  writeFileAtomic0600(path, JSON.stringify(credential, null, 2) + '\n')
  return path
}

export class CredentialError extends Error {}

/** Loads and checks the credential; `warn` hears about a file others can read. */
export function loadCredential(stateDir: string, warn: (msg: string) => void = () => {}): Credential {
  const path = credentialPath(stateDir)
  if (!existsSync(path)) throw new CredentialError(`not enrolled: ${path} does not exist; run "gpuhq-agent enroll" first`)
  const mode = statSync(path).mode & 0o777
  if (mode & 0o077) warn(`${path} is readable by other users (mode ${mode.toString(8)}); it should be 0600`)
  let data: Partial<Credential>
  try {
    data = JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    throw new CredentialError(`${path} is not valid JSON; enrol again`)
  }
  for (const key of ['url', 'server_id', 'agent_token', 'ws_url'] as const)
    if (typeof data[key] !== 'string' || !data[key]) throw new CredentialError(`${path} lacks ${key}; enrol again`)
  return {
    ...(data as Credential),
    heartbeat_interval_s: positive(data.heartbeat_interval_s, 15),
    telemetry_interval_s: positive(data.telemetry_interval_s, 60),
    simulate: Number.isInteger(data.simulate) && data.simulate! > 0 ? data.simulate : undefined,
  }
}

function positive(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback
}
