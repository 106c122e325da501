import { Elysia } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { ProblemError } from '../../platform/problem'
import { NoContent, responses, Served } from '../../platform/schemas'
import { HelloBody, Registered, RegisterBody } from './agent.model'
import { agentHello, registerAgent } from './agent.service'
import { agentTarball, installScript } from './agent.files'

const tags = ['agent']

/** The installer and the agent itself, for `curl -fsSL ${PUBLIC_URL}/agent/install.sh | sudo sh -s -- …`. */
export function agentDownloadRoutes() {
  return new Elysia({ name: 'agent-downloads' })
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
      ({ body, set }) => {
        const out = registerAgent({ deps, input: body })
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
      ({ verb, body, set }) => {
        agentHello({ ...verb, input: body })
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
