import { Elysia, t } from 'elysia'
import { describe } from '../../platform/access'
import { negotiateEncoding } from '../../platform/compression'
import { problems } from '../../platform/problem'
import { responses, Served } from '../../platform/schemas'
import { consoleBundle } from './console.build'

/**
 * The web console at `/` and its files under `/app/` (docs/console.md), on the API's own origin so
 * the `__Host-` session cookie and the CSRF rules apply to it unchanged. The page loads only files
 * of this origin and talks only to /api/v1: the Content-Security-Policy says so to the browser.
 */

// 'self' only. No inline script or style (uPlot and Preact set styles through the CSSOM, which a
// policy does not govern); form-action 'none' because every form is sent by script, so a page whose
// script failed can never put a password into a URL by submitting natively.
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const IMMUTABLE = 'public, max-age=31536000, immutable'

/** The bundle, or 503 when it did not build (the API itself keeps working; the log says why). */
const bundle = () =>
  consoleBundle().catch(() => {
    throw problems.unavailable('the web console did not build; the service log says why', 300)
  })

export function consoleRoutes() {
  return new Elysia({ name: 'console' })
    .get(
      '/',
      async () =>
        new Response((await bundle()).html, {
          headers: {
            'content-type': 'text/html; charset=utf-8',
            // Always asked again, so a new build's asset names reach the browser at once.
            'cache-control': 'no-cache',
            'content-security-policy': CSP,
            'referrer-policy': 'same-origin',
            'cross-origin-opener-policy': 'same-origin',
          },
        }),
      {
        response: responses({ 200: Served('text/html', 'The console page') }, [503]),
        detail: describe(
          { public: true },
          {
            tags: ['console'],
            summary: 'The web console',
            description:
              'The page that loads the console, a client of this API with the session cookie. `no-cache`; a Content-Security-Policy allows only this origin.',
          },
        ),
      },
    )
    .get(
      '/app/:file',
      async ({ params, request }) => {
        const asset = (await bundle()).assets.get(params.file)
        if (!asset) throw problems.notFound('no such console file')
        const coding = negotiateEncoding(request.headers.get('accept-encoding'))
        const body = (coding && asset.encoded[coding]) || asset.body
        const headers: Record<string, string> = { 'content-type': asset.type, 'cache-control': IMMUTABLE, vary: 'Accept-Encoding' }
        if (body !== asset.body) headers['content-encoding'] = coding!
        return new Response(body, { headers })
      },
      {
        params: t.Object({ file: t.String({ maxLength: 128 }) }),
        response: responses({ 200: Served(['text/javascript', 'text/css', 'image/svg+xml'], 'A script, stylesheet or icon of the console') }, [404, 422, 503]),
        detail: describe(
          { public: true },
          {
            tags: ['console'],
            summary: 'A file of the web console',
            description: 'Names carry a hash of their content, so each is cached for a year (`immutable`); an unknown name is 404.',
          },
        ),
      },
    )
}
