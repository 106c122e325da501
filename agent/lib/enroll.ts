import { existsSync, readFileSync, statSync } from 'node:fs'
import { credentialPath, saveCredential, type Credential } from './credential'
import { apiUrl, describeNetworkError, isLoopback, postJson, readProblem, type Problem } from './http'
import type { Logger } from './log'
import type { HostFacts } from './machine'
import { AGENT_VERSION } from './version'

const INIT_PREFIX = 'gpuhq_init_'
const AGENT_PREFIX = 'gpuhq_agt_'

export class EnrollError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message)
  }
}

/** The init token from a file: trimmed, checked for shape; `warn` hears about loose permissions. */
export function readTokenFile(path: string, warn: (msg: string) => void = () => {}): string {
  if (!existsSync(path)) throw new EnrollError(`token file ${path} does not exist`)
  if (statSync(path).mode & 0o077) warn(`token file ${path} is readable by other users; delete it after enrolling`)
  return checkInitToken(readFileSync(path, 'utf8'))
}

export async function readTokenStdin(stdin: AsyncIterable<Uint8Array> = process.stdin): Promise<string> {
  const chunks: Uint8Array[] = []
  for await (const chunk of stdin) {
    chunks.push(chunk)
    if (chunks.reduce((n, c) => n + c.length, 0) > 4096) break // a token is ~60 bytes; never read a whole stream
  }
  return checkInitToken(Buffer.concat(chunks).toString('utf8'))
}

function checkInitToken(raw: string): string {
  const token = raw.trim()
  if (!token) throw new EnrollError('no init token was given (the file or standard input was empty)')
  if (token.startsWith(AGENT_PREFIX))
    throw new EnrollError('that is an agent credential (gpuhq_agt_…), not an init token; create an init token in gpuhq and use it')
  if (!token.startsWith(INIT_PREFIX) || /\s/.test(token)) throw new EnrollError(`that is not an init token: init tokens start with ${INIT_PREFIX}`)
  return token
}

type RegisterAnswer = Pick<Credential, 'server_id' | 'agent_token' | 'ws_url' | 'heartbeat_interval_s' | 'telemetry_interval_s'>

/** Claims the init token (POST /agent/register) and stores the credential with mode 0600. */
export async function enroll(input: { url: string; token: string; stateDir: string; facts: HostFacts; log: Logger; simulate?: number }): Promise<Credential> {
  const { url, token, stateDir, facts, log, simulate } = input
  if (!url.startsWith('https:') && !isLoopback(url))
    log.warn('the service URL is not https: the init token and the agent credential travel unencrypted', { url })
  const endpoint = apiUrl(url, '/agent/register')
  let res: Response
  try {
    res = await postJson(endpoint, { init_token: token, agent_version: AGENT_VERSION, ...facts })
  } catch (err) {
    throw new EnrollError(`enrolment failed: ${describeNetworkError(err, endpoint)}`)
  }
  if (res.status >= 300 && res.status < 400)
    throw new EnrollError(`enrolment failed: the service redirected to ${res.headers.get('location') ?? '(no location)'}; enrol with the final URL`)
  if (res.status !== 201 && res.status !== 200) throw new EnrollError(explainRegisterFailure(await readProblem(res)), res.status === 426 ? 78 : 1)
  const answer = (await res.json().catch(() => null)) as Partial<RegisterAnswer> | null
  if (!answer || typeof answer.agent_token !== 'string' || typeof answer.server_id !== 'string' || typeof answer.ws_url !== 'string')
    throw new EnrollError('enrolment failed: the service answered 201 without server_id, agent_token and ws_url')
  if (existsSync(credentialPath(stateDir))) log.info('replacing the existing credential of this host', { state_dir: stateDir })
  const credential: Credential = {
    url,
    server_id: answer.server_id,
    agent_token: answer.agent_token,
    ws_url: answer.ws_url,
    heartbeat_interval_s: Number(answer.heartbeat_interval_s) || 15,
    telemetry_interval_s: Number(answer.telemetry_interval_s) || 60,
    ...(facts.port_range ? { port_range: facts.port_range } : {}),
    ...(simulate ? { simulate } : {}),
    enrolled_at: new Date().toISOString(),
  }
  saveCredential(stateDir, credential)
  return credential
}

function explainRegisterFailure(p: Problem): string {
  const detail = p.detail ? ` (${p.detail})` : ''
  switch (p.status) {
    case 401:
      return 'enrolment refused: the init token is unknown, already used, expired or revoked. Init tokens work once and for at most an hour; create a new one in gpuhq.'
    case 409:
      if (p.code === 'server_limit_reached')
        return `enrolment refused: the account's plan allows no more servers${detail}. Upgrade the plan or decommission a server.`
      return `enrolment refused: conflict${p.code ? ` ${p.code}` : ''}${detail}`
    case 426:
      return `enrolment refused: this agent (version ${AGENT_VERSION}) is older than the service accepts${detail}. Install a newer agent.`
    case 403:
      return `enrolment refused: ${p.code ?? 'forbidden'}${detail}${p.code === 'account_frozen' ? '. Top up the account to unfreeze it.' : ''}`
    case 422: {
      const fields = (p.errors ?? []).map((e) => `${e.path || '(body)'}: ${e.code}`).join(', ')
      return `enrolment refused: the service rejected the request${fields ? ` (${fields})` : detail}`
    }
    case 404:
      return 'enrolment failed: the service has no /api/v1/agent/register here; check --url (it is the address of gpuhq itself)'
    default:
      return `enrolment failed: the service answered ${p.status}${p.code ? ` ${p.code}` : ''}${detail}`
  }
}
