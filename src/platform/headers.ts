/**
 * Response headers every answer gets (docs/conventions.md "Response headers"):
 * - `X-Content-Type-Options: nosniff` everywhere, so a browser never runs a JSON or CSV answer as
 *   script or page;
 * - `Cache-Control: no-store` on every answer to a request that carried credentials (or set a
 *   cookie), unless the route chose its own caching: such answers may hold secrets shown once,
 *   balances and member lists, and must not sit in a shared or browser cache;
 * - on HTML pages, framing refused (`X-Frame-Options: DENY` and CSP `frame-ancestors 'none'`),
 *   against clickjacking of the checkout and docs pages;
 * - `Strict-Transport-Security` when PUBLIC_URL is https.
 */
const HSTS = 'max-age=31536000; includeSubDomains'

export function securityHeaders(response: Response, ctx: { credentialed: boolean; https: boolean }): void {
  const h = response.headers
  h.set('x-content-type-options', 'nosniff')
  if ((ctx.credentialed || h.has('set-cookie')) && !h.has('cache-control')) h.set('cache-control', 'no-store')
  if ((h.get('content-type') ?? '').startsWith('text/html')) {
    h.set('x-frame-options', 'DENY')
    const csp = h.get('content-security-policy')
    if (!csp) h.set('content-security-policy', "frame-ancestors 'none'")
    else if (!/frame-ancestors/.test(csp)) h.set('content-security-policy', `${csp}; frame-ancestors 'none'`)
  }
  if (ctx.https) h.set('strict-transport-security', HSTS)
}
