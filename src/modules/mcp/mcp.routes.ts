import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import { actorOf, describe } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { enforceRateLimit } from '../../platform/rate-limit'
import { NoContent, responses, Served } from '../../platform/schemas'
import { auditContextOf } from '../audit'
import { gatewayUrl, getAccess, getClient, putAccess, removeClient, whoami } from './access.service'
import { consentPage } from './consent.page'
import { handleGateway, type Dispatch } from './gateway'
import { callerOf } from './caller'
import { AccessAnswer, AccessBody, AuthorizeAnswer, AuthorizeBody, Client, RegisterAnswer, TokenAnswer, Whoami } from './mcp.model'
import { authorize, exchangeToken, registerClient } from './oauth.service'
import { GROUPS } from './tools'

const tags = ['ai access']
const MANAGE = { role: 'admin', cookieOnly: true, entitlement: 'ai_access' } as const
/** Dynamic registrations per client address per hour. */
const REGISTER_PER_HOUR = 20

/** The OAuth and MCP metadata documents (RFC 9728, RFC 8414), public and cacheable. */
function metadata(deps: Deps) {
  const base = `${deps.config.publicUrl}/api/v1`
  const resource = {
    resource: gatewayUrl(deps),
    authorization_servers: [deps.config.publicUrl],
    scopes_supported: ['mcp'],
    bearer_methods_supported: ['header'],
    resource_name: 'gpuhq',
    resource_documentation: `${deps.config.publicUrl}/api/v1/docs`,
  }
  const server = {
    issuer: deps.config.publicUrl,
    authorization_endpoint: `${base}/mcp/authorize`,
    token_endpoint: `${base}/mcp/token`,
    registration_endpoint: `${base}/mcp/register`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    scopes_supported: ['mcp'],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${deps.config.publicUrl}/api/v1/docs`,
  }
  return { resource, server }
}

const Json = Type.Record(Type.String(), Type.Unknown())

/** AI-assistant access: managing the token and clients, the OAuth server, and the MCP gateway (docs/ai-access.md). */
export function mcpRoutes(deps: Deps, dispatch: Dispatch) {
  const meta = metadata(deps)
  const cacheable = (set: { headers: Record<string, unknown> }) => {
    set.headers['cache-control'] = 'public, max-age=3600'
  }
  const prmHook = {
    response: responses({ 200: Json }, []),
    detail: describe({ public: true }, { tags, summary: 'OAuth protected resource metadata of the MCP gateway (RFC 9728)' }),
  }
  const asmHook = {
    response: responses({ 200: Json }, []),
    detail: describe({ public: true }, { tags, summary: 'OAuth authorization server metadata (RFC 8414)' }),
  }
  const gateway = async ({ request, body }: { request: Request; body: unknown }) => handleGateway(deps, request, body, callerOf(request), dispatch)
  const gatewayHook = (summary: string, withBody: boolean) => ({
    ...(withBody ? { body: t.Unknown({ description: 'One JSON-RPC message (MCP 2025-11-25)' }) } : {}),
    response: responses(
      { 200: t.Unknown({ description: 'A JSON-RPC answer, as text/event-stream (or 202 for a notification)' }) },
      [401, 403, 405, 406, 413, 415, 429],
    ),
    detail: describe(
      { mcp: true, entitlement: 'ai_access' },
      {
        tags,
        summary,
        description:
          'The MCP endpoint (Streamable HTTP, protocol 2025-11-25, stateless): POST one JSON-RPC message with Accept: application/json, text/event-stream. GET and DELETE answer 405 (no standalone stream, no sessions). A request with an Origin other than PUBLIC_URL → 403. Unauthenticated → 401 with WWW-Authenticate resource_metadata; a tools/call of a tool the owner did not allow → 403 insufficient_scope.',
      },
    ),
  })

  return new Elysia({ name: 'mcp' })
    .get(
      '/.well-known/oauth-protected-resource',
      ({ set }) => {
        cacheable(set)
        return meta.resource
      },
      prmHook,
    )
    .get(
      '/.well-known/oauth-protected-resource/mcp',
      ({ set }) => {
        cacheable(set)
        return meta.resource
      },
      prmHook,
    )
    .get(
      '/.well-known/oauth-authorization-server',
      ({ set }) => {
        cacheable(set)
        return meta.server
      },
      asmHook,
    )
    .post('/mcp', gateway, gatewayHook('MCP gateway: one JSON-RPC message', true))
    .get(
      '/mcp',
      ({ request }) => handleGateway(deps, request, undefined, callerOf(request), dispatch),
      gatewayHook('MCP gateway: no standalone stream (405)', false),
    )
    .delete(
      '/mcp',
      ({ request }) => handleGateway(deps, request, undefined, callerOf(request), dispatch),
      gatewayHook('MCP gateway: no sessions to end (405)', false),
    )
    .group('/api/v1', (app) =>
      app
        .get('/mcp/access', ({ request }) => getAccess({ deps, actor: actorOf(request) }), {
          response: responses({ 200: AccessAnswer }, [401, 403]),
          detail: describe(MANAGE, {
            tags,
            summary: 'AI-assistant access: state, tool catalogue, connected clients',
            description: `Groups: ${GROUPS.map((g) => g.key).join(', ')}. Never holds the token. Like every AI-access operation, 403 feature_not_entitled on a plan without ai_access (decisions.md).`,
          }),
        })
        .put(
          '/mcp/access',
          ({ request, body, set }) => {
            set.headers['cache-control'] = 'no-store'
            return putAccess({ deps, actor: actorOf(request), audit: auditContextOf(request), input: body })
          },
          {
            beforeHandle: idempotent(deps),
            body: AccessBody,
            response: responses({ 200: AccessAnswer }, [401, 403, 413, 415, 422]),
            detail: describe(MANAGE, {
              tags,
              summary: 'Enable, rescope, reissue or disable the AI-assistant token',
              description:
                'The state table: first enable issues `gpuhq_mcp_…` (plaintext only in this answer; stored as SHA-256); enabled again rewrites `allowed_tools` with the secret unchanged; `reissue: true` issues a new secret, permissions and clients untouched; `enabled: false` revokes the token and every client token. Unknown or repeated tool → 422. Takes Idempotency-Key (a replay of the issuing answer is kept encrypted).',
            }),
          },
        )
        .get('/mcp/clients/:client_id', ({ request, params }) => getClient({ deps, actor: actorOf(request), clientId: params.client_id }), {
          params: t.Object({ client_id: t.String({ format: 'uuid' }) }),
          response: responses({ 200: Client }, [401, 403, 404, 422]),
          detail: describe(MANAGE, { tags, summary: 'One connected client', description: "A client not connected to this tenant (another tenant's) is 404." }),
        })
        .delete(
          '/mcp/clients/:client_id',
          ({ request, params, set }) => {
            removeClient({ deps, actor: actorOf(request), audit: auditContextOf(request), clientId: params.client_id })
            set.status = 204
            return null
          },
          {
            params: t.Object({ client_id: t.String({ format: 'uuid' }) }),
            response: responses({ 204: NoContent }, [401, 403, 404, 422]),
            detail: describe(MANAGE, { tags, summary: 'Disconnect a client', description: 'Every access and refresh token it holds stops working at once.' }),
          },
        )
        .get('/mcp/whoami', ({ request }) => whoami(deps, callerOf(request)), {
          response: responses({ 200: Whoami }, [401, 403]),
          detail: describe({ mcp: true, entitlement: 'ai_access' }, { tags, summary: 'Who the presented AI-assistant token is and what it may call' }),
        })
        .post(
          '/mcp/register',
          ({ request, body, set }) => {
            enforceRateLimit(deps.db, deps.clock, `mcp-register:${requestState(request).ip}`, REGISTER_PER_HOUR, 3600)
            set.status = 201
            set.headers['cache-control'] = 'no-store'
            return registerClient(deps, body)
          },
          {
            body: t.Unknown(),
            response: responses({ 201: RegisterAnswer }, [400, 413, 415, 429]),
            detail: describe(
              { public: true },
              {
                tags,
                summary: 'Dynamic client registration (RFC 7591)',
                description: `Public, ${REGISTER_PER_HOUR} per client address per hour. \`client_name\` and \`redirect_uris\` (1-10; https, or http on 127.0.0.1, [::1] or localhost) are required; public clients only (token_endpoint_auth_method none). Refusals are 400 with the RFC's \`error\` (invalid_redirect_uri, invalid_client_metadata) beside the problem members.`,
              },
            ),
          },
        )
        .get('/mcp/authorize', ({ request }) => consentPage(deps, new URL(request.url).searchParams), {
          response: responses({ 200: Served('text/html', 'The consent page') }, [422]),
          detail: describe(
            { public: true },
            {
              tags,
              summary: "The consent page (the authorization server's authorization_endpoint)",
              description:
                'An HTML page for the browser an MCP client opens: it shows the client and, once the owner approves while signed in, posts POST /api/v1/mcp/authorize and follows redirect_to. An unknown client_id, a redirect_uri it did not register, a response_type other than code or a missing S256 challenge → 422 (a problem document, never a redirect).',
            },
          ),
        })
        .post('/mcp/authorize', ({ request, body }) => authorize({ deps, actor: actorOf(request), audit: auditContextOf(request), input: body }), {
          body: AuthorizeBody,
          response: responses({ 200: AuthorizeAnswer }, [401, 403, 413, 415, 422]),
          detail: describe(MANAGE, {
            tags,
            summary: 'Approve a client: issue an authorization code, answer where the browser goes',
            description:
              'redirect_uri must equal one registered for the client string for string (a loopback one may differ only in its port); the challenge is PKCE S256 (`code_challenge_method` may be omitted; plain → 422); `state` comes back unchanged, with `code` and `iss`. The code lives 5 minutes and is bound to client, redirect URI and challenge. Access switched off → 403 forbidden (the spec lists 401, 403, 422 for this operation).',
          }),
        })
        .post(
          '/mcp/token',
          ({ body, set }) => {
            set.headers['cache-control'] = 'no-store'
            set.headers.pragma = 'no-cache'
            return exchangeToken(deps, (body ?? {}) as Record<string, unknown>)
          },
          {
            body: t.Optional(t.Unknown()),
            response: responses({ 200: TokenAnswer }, [400, 413, 415]),
            detail: describe(
              { public: true },
              {
                tags,
                summary: 'OAuth token endpoint (authorization_code with PKCE, refresh_token)',
                description:
                  'Form (application/x-www-form-urlencoded) or JSON. authorization_code: code, redirect_uri, client_id, code_verifier (43-128 unreserved characters), resource optional. A failed verifier spends the code; a code presented again is refused and what it issued is revoked. refresh_token: rotates (the old one is spent); a spent one presented again revokes the whole authorization. Access tokens live 1 hour, bound to PUBLIC_URL + /mcp; an authorization lasts 30 days. Errors are 400 with the RFC 6749 `error`. Always Cache-Control: no-store.',
              },
            ),
          },
        ),
    )
}
