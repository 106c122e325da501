import type { Deps } from '../../platform/context'
import { gatewayUrl } from './access.service'
import { acceptsResource, challengeProblem, registeredClient } from './oauth.service'

const htmlEscape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
}

function page(status: number, body: string): Response {
  return new Response(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>gpuhq: connect an assistant</title></head><body>${body}</body></html>`,
    { status, headers: PAGE_HEADERS },
  )
}

/**
 * An authorization error response to the checked redirect URI (RFC 6749 §4.1.2.1): `error`,
 * `error_description`, `state` unchanged, and `iss` (RFC 9207), so the client can tell which
 * server answered.
 */
function authorizationError(deps: Deps, redirect: string, state: string | null, error: string, description: string): string {
  const u = new URL(redirect)
  u.searchParams.set('error', error)
  u.searchParams.set('error_description', description.replace(/["\\]/g, "'"))
  if (state !== null) u.searchParams.set('state', state)
  u.searchParams.set('iss', deps.config.publicUrl)
  return u.toString()
}

/**
 * GET /api/v1/mcp/authorize, the authorization endpoint: the page an MCP client opens in the owner's
 * browser. An unknown client or a redirect URI it did not register gets an error page here (400,
 * HTML): nothing is ever sent to an unchecked address. Once client and redirect URI are known good,
 * every other mistake goes back to the client as the RFC says (302 to the redirect URI with
 * `error`, `error_description`, `state`, `iss`): a response_type other than code
 * (unsupported_response_type), a missing challenge or one that is not S256 (invalid_request), a
 * foreign resource (invalid_target). Otherwise it asks for consent and, on approval, posts the JSON
 * POST /api/v1/mcp/authorize with the session cookie (same origin, so the CSRF rules hold) and
 * follows `redirect_to`. Deny goes back with `error=access_denied`.
 */
export async function consentPage(deps: Deps, q: URLSearchParams): Promise<Response> {
  const clientId = (q.get('client_id') ?? '').toLowerCase()
  const redirect = q.get('redirect_uri') ?? ''
  const state = q.get('state')
  const { client, refused } = await registeredClient(deps, clientId, redirect)
  if (refused)
    return page(
      400,
      `<h1>This connection request cannot be used</h1><p>${htmlEscape(refused.message)}.</p><p>The assistant that sent you here is misconfigured: its client_id and redirect_uri must match its registration. Nothing was sent back to it.</p>`,
    )
  const back = (error: string, description: string) =>
    new Response(null, { status: 302, headers: { location: authorizationError(deps, redirect, state, error, description), 'cache-control': 'no-store' } })
  if (q.get('response_type') !== 'code') return back('unsupported_response_type', 'only response_type=code is supported (authorization code with PKCE)')
  // RFC 7636 §4.3: no method means plain, which is refused like an explicit plain.
  const pkce = challengeProblem(q.get('code_challenge'), q.get('code_challenge_method') ?? 'plain')
  if (pkce) return back('invalid_request', pkce.message)
  const resource = q.get('resource')
  if (resource !== null && !acceptsResource(deps, resource)) return back('invalid_target', `resource must be ${gatewayUrl(deps)}`)
  const body = `<h1>Connect ${htmlEscape(client.name)} to gpuhq?</h1>
<p>It will reach your fleet through the tools you allowed under AI access, as you. You can disconnect it at any time.</p>
<p id="msg" role="status"></p>
<button id="allow" type="button">Allow</button> <a href="${htmlEscape(authorizationError(deps, redirect, state, 'access_denied', 'the owner did not allow the connection'))}">Deny</a>
<script type="application/json" id="req">${JSON.stringify({
    client_id: clientId,
    redirect_uri: redirect,
    code_challenge: q.get('code_challenge'),
    code_challenge_method: 'S256',
    state,
    ...(resource ? { resource } : {}),
  }).replace(/</g, '\\u003c')}</script>
<script>
document.getElementById('allow').onclick = async () => {
  const r = await fetch('/api/v1/mcp/authorize', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: document.getElementById('req').textContent })
  const b = await r.json()
  if (r.ok) location.assign(b.redirect_to)
  else document.getElementById('msg').textContent = r.status === 401 ? 'Sign in to gpuhq in this browser first, then reload this page.' : (b.detail || 'Refused.')
}
</script>`
  return page(200, body)
}
