import { Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { enforceRateLimit } from '../../platform/rate-limit'
import { NoContent, responses, Served } from '../../platform/schemas'
import { gatewayUrl, getAccess, getClient, putAccess, removeClient, whoami } from './access.service'
import { consentPage } from './consent.page'
import { handleGateway, type Dispatch } from './gateway'
import { callerOf } from './caller'
import {
  AccessAnswer,
  AccessBody,
  AuthorizeAnswer,
  AuthorizeBody,
  Client,
  OAuthErrorSchema,
  oauthResponses,
  RegisterAnswer,
  RegisterBody,
  RevokeBody,
  TokenAnswer,
  TokenBody,
  Whoami,
} from './mcp.model'
import { oauthAnswers } from './oauth.errors'
import { authorize, exchangeToken, registerClient, revokeOAuthToken } from './oauth.service'
import { GROUPS } from './tools'

const tags = ['ai access']
const MANAGE = { role: 'admin', cookieOnly: true, entitlement: 'ai_access', reach: 'tenant' } as const
/** Dynamic registrations per client address per hour. */
const REGISTER_PER_HOUR = 20

/**
 * The OAuth and MCP metadata documents (RFC 9728, RFC 8414), public and cacheable. RFC 9728 §3.3:
 * the `resource` of a protected-resource document is the identifier its well-known address was
 * made from, so `/.well-known/oauth-protected-resource/mcp` names the gateway (PUBLIC_URL/mcp) and
 * the root `/.well-known/oauth-protected-resource` names the origin (PUBLIC_URL); both name the same
 * authorization server, and a token asked for either resource is one for the gateway.
 */
function metadata(deps: Deps) {
  const base = `${deps.config.publicUrl}/api/v1`
  const gateway = {
    resource: gatewayUrl(deps),
    authorization_servers: [deps.config.publicUrl],
    scopes_supported: ['mcp'],
    bearer_methods_supported: ['header'],
    resource_name: 'gpuhq',
    resource_documentation: `${deps.config.publicUrl}/api/v1/docs`,
  }
  const origin = { ...gateway, resource: deps.config.publicUrl, resource_name: 'gpuhq (its OAuth-protected resource is the MCP gateway, PUBLIC_URL/mcp)' }
  const server = {
    issuer: deps.config.publicUrl,
    authorization_endpoint: `${base}/mcp/authorize`,
    token_endpoint: `${base}/mcp/token`,
    registration_endpoint: `${base}/mcp/register`,
    revocation_endpoint: `${base}/mcp/revoke`,
    revocation_endpoint_auth_methods_supported: ['none'],
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    scopes_supported: ['mcp'],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${deps.config.publicUrl}/api/v1/docs`,
  }
  return { gateway, origin, server }
}

const Json = Type.Record(Type.String(), Type.Unknown())

/** AI-assistant access: managing the token and clients, the OAuth server, and the MCP gateway (docs/ai-access.md). */
export function mcpRoutes(deps: Deps, dispatch: Dispatch) {
  const meta = metadata(deps)
  const cacheable = (set: { headers: Record<string, unknown> }) => {
    set.headers['cache-control'] = 'public, max-age=3600'
  }
  const prmHook = (summary: string) => ({
    response: responses({ 200: Json }, []),
    detail: describe({ public: true }, { tags, summary }),
  })
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
          "The MCP endpoint (Streamable HTTP, protocol 2025-11-25, stateless): POST one JSON-RPC message with Accept: application/json, text/event-stream. GET and DELETE answer 405 (no standalone stream, no sessions). DNS-rebinding protection: a Host other than PUBLIC_URL's host, or an Origin other than PUBLIC_URL → 403, a valid token or not. Unauthenticated → 401 with WWW-Authenticate resource_metadata. A tools/call of a tool the token may not use is a tool result with isError: true saying what to allow under AI access (never an HTTP 403 on a valid token); a tool answer is valid JSON of at most 64 KiB, saying in `truncated` what was left out.",
      },
    ),
  })

  // The OAuth endpoints answer errors as the RFCs say, not as problem documents (docs/conventions.md "Errors").
  const oauthDoc = { 'x-gpuhq-errors': 'oauth' } as const
  return new Elysia({ name: 'mcp' })
    .model({ OAuthError: OAuthErrorSchema })
    .get(
      '/.well-known/oauth-protected-resource',
      ({ set }) => {
        cacheable(set)
        return meta.origin
      },
      prmHook('OAuth protected resource metadata of the origin (RFC 9728): resource PUBLIC_URL, the same authorization server as the gateway'),
    )
    .get(
      '/.well-known/oauth-protected-resource/mcp',
      ({ set }) => {
        cacheable(set)
        return meta.gateway
      },
      prmHook('OAuth protected resource metadata of the MCP gateway (RFC 9728): resource PUBLIC_URL/mcp'),
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
    .use(
      apiRoutes('mcp-api', deps)
        .get('/mcp/access', ({ verb }) => getAccess(verb), {
          response: responses({ 200: AccessAnswer }, [401, 403]),
          detail: describe(MANAGE, {
            tags,
            summary: 'AI-assistant access: state, tool catalogue, connected clients',
            description: `Groups: ${GROUPS.map((g) => g.key).join(', ')}. Never holds the token. Like every AI-access operation, 403 feature_not_entitled on a plan without ai_access (decisions.md).`,
          }),
        })
        .put(
          '/mcp/access',
          ({ verb, body, set }) => {
            set.headers['cache-control'] = 'no-store'
            return putAccess({ ...verb, input: body })
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
        .get('/mcp/clients/:client_id', ({ verb, params }) => getClient({ ...verb, clientId: params.client_id }), {
          params: t.Object({ client_id: t.String({ format: 'uuid' }) }),
          response: responses({ 200: Client }, [401, 403, 404, 422]),
          detail: describe(MANAGE, { tags, summary: 'One connected client', description: "A client not connected to this tenant (another tenant's) is 404." }),
        })
        .delete(
          '/mcp/clients/:client_id',
          async ({ verb, params, set }) => {
            await removeClient({ ...verb, clientId: params.client_id })
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
          async ({ request, body, set }) => {
            await enforceRateLimit(deps.db, deps.clock, `mcp-register:${requestState(request).ip}`, REGISTER_PER_HOUR, 3600)
            set.status = 201
            set.headers['cache-control'] = 'no-store'
            return await registerClient(deps, body)
          },
          {
            body: RegisterBody,
            mapResponse: oauthAnswers('register'),
            response: oauthResponses({ 201: RegisterAnswer }, [400, 413, 415, 429]),
            detail: describe(
              { public: true },
              {
                tags,
                summary: 'Dynamic client registration (RFC 7591)',
                description: `Public, ${REGISTER_PER_HOUR} per client address per hour. \`client_name\` and \`redirect_uris\` (1-10; https, or http on 127.0.0.1, [::1] or localhost) are required; public clients only (token_endpoint_auth_method none); unknown metadata is ignored. Errors are OAuth errors, not problem documents (RFC 7591 §3.2.2): application/json \`{"error", "error_description"}\`, 400 with \`invalid_redirect_uri\` or \`invalid_client_metadata\`; 413 and 415 carry \`invalid_client_metadata\`, 429 \`temporarily_unavailable\` with Retry-After.`,
                ...oauthDoc,
              },
            ),
          },
        )
        .get('/mcp/authorize', ({ request }) => consentPage(deps, new URL(request.url).searchParams), {
          response: responses(
            {
              200: Served('text/html', 'The consent page'),
              302: Type.Null({
                description:
                  'Back to the client: its registered redirect_uri with error (unsupported_response_type, invalid_request, invalid_target), error_description, state and iss (RFC 6749 §4.1.2.1, RFC 9207)',
              }),
              400: Served('text/html', 'An error page: the client_id is unknown or the redirect_uri is not one it registered'),
            },
            [],
          ),
          detail: describe(
            { public: true },
            {
              tags,
              summary: "The consent page (the authorization server's authorization_endpoint)",
              description:
                'An HTML page for the browser an MCP client opens: it shows the client and, once the owner approves while signed in, posts POST /api/v1/mcp/authorize and follows redirect_to; Deny goes back with error=access_denied. An unknown client_id or a redirect_uri it did not register → a 400 HTML error page, never a redirect. With client and redirect_uri valid, every other mistake goes back to the client as an OAuth authorization error (302): response_type other than code → unsupported_response_type; no code_challenge, or a method other than S256 (none given means plain) → invalid_request; a resource other than PUBLIC_URL/mcp or PUBLIC_URL → invalid_target; each with error_description, state and iss.',
              ...oauthDoc,
            },
          ),
        })
        .post('/mcp/authorize', ({ verb, body }) => authorize({ ...verb, input: body }), {
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
            return exchangeToken(deps, body)
          },
          {
            body: TokenBody,
            // Documents the form beside JSON; never runs (the platform's parser answers every body first).
            parse: 'urlencoded',
            mapResponse: oauthAnswers('token'),
            response: oauthResponses({ 200: TokenAnswer }, [400, 413, 415]),
            detail: describe(
              { public: true },
              {
                tags,
                summary: 'OAuth token endpoint (authorization_code with PKCE, refresh_token)',
                description:
                  'Form (application/x-www-form-urlencoded) or JSON. authorization_code: code, redirect_uri, client_id, code_verifier (43-128 unreserved characters), resource optional. A failed verifier spends the code; a code presented again is refused and what it issued is revoked; a code issued before its client was disconnected or access switched off is revoked. refresh_token: rotates (the old one is spent); a spent one presented again revokes the whole authorization. Access tokens live 1 hour, bound to PUBLIC_URL + /mcp; an authorization lasts 30 days. Always Cache-Control: no-store. Errors are OAuth errors, not problem documents (RFC 6749 §5.2): application/json `{"error", "error_description"}`, 400 with invalid_request, invalid_grant, invalid_target or unsupported_grant_type (413 and 415 carry invalid_request).',
                ...oauthDoc,
              },
            ),
          },
        )
        .post(
          '/mcp/revoke',
          ({ body, set }) => {
            set.headers['cache-control'] = 'no-store'
            return revokeOAuthToken(deps, body)
          },
          {
            body: RevokeBody,
            parse: 'urlencoded',
            mapResponse: oauthAnswers('revoke'),
            response: oauthResponses({ 200: Type.Object({}, { description: 'Revoked, or nothing to revoke (RFC 7009 §2.2)' }) }, [400, 413, 415]),
            detail: describe(
              { public: true },
              {
                tags,
                summary: 'OAuth token revocation (RFC 7009)',
                description:
                  'Form (application/x-www-form-urlencoded) or JSON: token, client_id, token_type_hint optional. A refresh token revokes its whole authorization (every access and refresh token of it); an access token only itself. An unknown, expired or revoked token, or one issued to another client, answers 200 all the same. Errors are OAuth errors (RFC 7009 §2.2.1), application/json: 400 invalid_request (no token or client_id), unsupported_token_type (the tenant token gpuhq_mcp_…, which PUT /api/v1/mcp/access revokes).',
                ...oauthDoc,
              },
            ),
          },
        ),
    )
}
