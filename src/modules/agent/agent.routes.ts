import { Elysia } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { ProblemError } from '../../platform/problem'
import { NoContent, responses, Served } from '../../platform/schemas'
import { HelloBody, Registered, RegisterBody } from './agent.model'
import { agentHello, registerAgent } from './agent.service'
import { agentBinary, type AgentTarget, agentTarball, installScript } from './agent.files'

const tags = ['agent']

function notBuilt(target: AgentTarget): ProblemError {
  return new ProblemError('not_found', {
    detail: `the agent for ${target} is not built on this service; its operator runs scripts/build-agent.ts (docs/agent.md "The single executable")`,
  })
}

/**
 * One executable per architecture and its SHA-256, for install.sh and the agent's self-update
 * (docs/agent.md "The single executable"): GET /agent/gpuhq-agent-linux-x64 (and -arm64) and
 * the same path + `.sha256`, a sha256sum line (`<hex>  gpuhq-agent-linux-x64`). The executable
 * also carries its checksum and version in headers. Public, as install.sh is: the file holds no secret.
 */
function binaryRoutes(deps: Deps) {
  const binary = (target: AgentTarget) => () => {
    const b = agentBinary(deps.config.agentBinDir, target)
    if (!b) throw notBuilt(target)
    return new Response(Bun.file(b.path), {
      headers: {
        'content-type': 'application/octet-stream',
        'content-disposition': `attachment; filename="${b.name}"`,
        'content-length': String(b.bytes),
        'x-checksum-sha256': b.sha256,
        'x-gpuhq-agent-version': b.version,
        'cache-control': 'no-cache',
      },
    })
  }
  const checksum = (target: AgentTarget) => () => {
    const b = agentBinary(deps.config.agentBinDir, target)
    if (!b) throw notBuilt(target)
    return new Response(`${b.sha256}  ${b.name}\n`, {
      headers: { 'content-type': 'text/plain; charset=utf-8', 'x-gpuhq-agent-version': b.version, 'cache-control': 'no-cache' },
    })
  }
  const binaryDoc = (target: AgentTarget) => ({
    response: responses({ 200: Served('application/octet-stream', `the agent for ${target}, one executable`) }, [404]),
    detail: describe(
      { public: true },
      {
        tags,
        summary: `The agent as one executable for ${target}`,
        description:
          'Built by scripts/build-agent.ts (bun build --compile). Headers: X-Checksum-Sha256 (hex), X-Gpuhq-Agent-Version. 404 when the operator has not built this architecture.',
      },
    ),
  })
  const checksumDoc = (target: AgentTarget) => ({
    response: responses({ 200: Served('text/plain', `"<sha256 hex>  gpuhq-agent-${target}", as sha256sum -c reads it`) }, [404]),
    detail: describe({ public: true }, { tags, summary: `The SHA-256 of the ${target} executable` }),
  })
  return new Elysia({ name: 'agent-binaries' })
    .get('/agent/gpuhq-agent-linux-x64', binary('linux-x64'), binaryDoc('linux-x64'))
    .get('/agent/gpuhq-agent-linux-x64.sha256', checksum('linux-x64'), checksumDoc('linux-x64'))
    .get('/agent/gpuhq-agent-linux-arm64', binary('linux-arm64'), binaryDoc('linux-arm64'))
    .get('/agent/gpuhq-agent-linux-arm64.sha256', checksum('linux-arm64'), checksumDoc('linux-arm64'))
}

/** The installer and the agent itself, for `curl -fsSL ${PUBLIC_URL}/agent/install.sh | sudo sh -s -- …`. */
export function agentDownloadRoutes(deps: Deps) {
  return new Elysia({ name: 'agent-downloads' })
    .use(binaryRoutes(deps))
    .get(
      '/agent/install.sh',
      () => new Response(installScript(), { headers: { 'content-type': 'text/x-shellscript; charset=utf-8', 'cache-control': 'public, max-age=300' } }),
      {
        response: responses({ 200: Served('text/x-shellscript', 'POSIX sh installer') }, []),
        detail: describe(
          { public: true },
          {
            tags,
            summary: 'The agent installer (systemd)',
            description: 'Reads the init token from standard input or --token-file, never from its arguments.',
          },
        ),
      },
    )
    .get(
      '/agent/gpuhq-agent.tar.gz',
      async () =>
        new Response(await agentTarball(), {
          headers: {
            'content-type': 'application/gzip',
            'content-disposition': 'attachment; filename="gpuhq-agent.tar.gz"',
            'cache-control': 'public, max-age=300',
          },
        }),
      {
        response: responses({ 200: Served('application/gzip', 'gzip-compressed tar of the agent') }, []),
        detail: describe({ public: true }, { tags, summary: 'The reference agent as a tarball (what install.sh downloads)' }),
      },
    )
}

export function agentRoutes(deps: Deps) {
  return apiRoutes('agent', deps, '/agent')
    .post(
      '/register',
      async ({ body, set }) => {
        const out = await registerAgent({ deps, input: body })
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return out
      },
      {
        body: RegisterBody,
        response: responses({ 201: Registered }, [401, 403, 409, 413, 415, 422, 426]),
        detail: describe(
          { public: true },
          {
            tags,
            summary: 'Enrol an agent: claim an init token once',
            description:
              'The init token is the credential. A used, expired, revoked or unknown token answers the same 401. An agent older than MIN_AGENT_VERSION gets 426 and the token stays unclaimed; so does a frozen account (403 account_frozen) or a full plan when a new server would be created (409 server_limit_reached). A bound token attaches to its server; an unbound one to the server with the same fingerprint, or creates one. Every other unused token bound to that server is revoked; a previous agent credential stops working at once.',
          },
        ),
      },
    )
    .post(
      '/hello',
      async ({ verb, body, set }) => {
        await agentHello({ ...verb, input: body })
        set.status = 204
        return null
      },
      {
        body: HelloBody,
        response: responses({ 204: NoContent }, [401, 403, 413, 415, 422, 426]),
        detail: describe(
          { agent: true },
          {
            tags,
            summary: 'HTTPS hello: the agent is alive and reachable',
            description: 'Recorded on the server detail (last_hello_at); never makes the server online — only heartbeats on the WebSocket session do.',
          },
        ),
      },
    )
    .get(
      '/ws',
      () => {
        throw new ProblemError('validation_failed', {
          status: 426,
          detail: 'a WebSocket upgrade is required',
          errors: [{ path: '/upgrade', code: 'required' }],
          headers: { Upgrade: 'websocket' },
        })
      },
      {
        response: responses({ 101: NoContent }, [401, 403, 426]),
        detail: describe(
          { agent: true },
          {
            tags,
            summary: 'The agent session (WebSocket)',
            description:
              'Upgrade to WebSocket with Authorization: Bearer gpuhq_agt_…; frames as in docs/fleet.md "The session" (hello → welcome, heartbeat, telemetry, event, command.*). A bad credential is refused before the upgrade (401). A plain GET answers 426.',
          },
        ),
      },
    )
}
