import type { Deps } from '../../platform/context'
import { invalidField } from '../../platform/domain-error'
import { checkedClient } from './oauth.service'

const htmlEscape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** Where Deny sends the browser (RFC 6749 §4.1.2.1): the checked redirect URI with error=access_denied. */
function denied(redirect: string, state: string | null): string {
  const u = new URL(redirect)
  u.searchParams.set('error', 'access_denied')
  if (state !== null) u.searchParams.set('state', state)
  return u.toString()
}

/**
 * GET /api/v1/mcp/authorize: the page an MCP client opens in the owner's browser. It checks the
 * client and redirect URI first and shows what is wrong instead of redirecting; otherwise it asks
 * for consent and, on approval, posts the JSON POST /api/v1/mcp/authorize with the session cookie
 * (same origin, so the CSRF rules hold) and follows `redirect_to`.
 */
export function consentPage(deps: Deps, q: URLSearchParams): Response {
  const clientId = (q.get('client_id') ?? '').toLowerCase()
  const redirect = q.get('redirect_uri') ?? ''
  // Never a redirect to an unchecked address: what is wrong is answered here, as POST /mcp/authorize would.
  if (q.get('response_type') !== 'code') throw invalidField('mcp', '/response_type', 'unsupported', 'only response_type=code is supported')
  if (q.get('code_challenge_method') !== 'S256')
    throw invalidField('mcp', '/code_challenge_method', 'unsupported', 'the client must use PKCE with S256 (plain or no method is refused)')
  const client = checkedClient(deps, {
    client_id: clientId,
    redirect_uri: redirect,
    code_challenge: q.get('code_challenge') ?? '',
    code_challenge_method: 'S256',
  })
  const body = `<h1>Connect ${htmlEscape(client.name)} to gpuhq?</h1>
<p>It will reach your fleet through the tools you allowed under AI access, as you. You can disconnect it at any time.</p>
<p id="msg" role="status"></p>
<button id="allow" type="button">Allow</button> <a href="${htmlEscape(denied(redirect, q.get('state')))}">Deny</a>
<script type="application/json" id="req">${JSON.stringify({
    client_id: clientId,
    redirect_uri: redirect,
    code_challenge: q.get('code_challenge'),
    code_challenge_method: 'S256',
    state: q.get('state'),
    ...(q.get('resource') ? { resource: q.get('resource') } : {}),
  }).replace(/</g, '\\u003c')}</script>
<script>
document.getElementById('allow').onclick = async () => {
  const r = await fetch('/api/v1/mcp/authorize', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: document.getElementById('req').textContent })
  const b = await r.json()
  if (r.ok) location.assign(b.redirect_to)
  else document.getElementById('msg').textContent = r.status === 401 ? 'Sign in to gpuhq in this browser first, then reload this page.' : (b.detail || 'Refused.')
}
</script>`
  return new Response(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>gpuhq: connect an assistant</title></head><body>${body}</body></html>`,
    {
      status: 200,
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'x-frame-options': 'DENY',
        'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
      },
    },
  )
}
