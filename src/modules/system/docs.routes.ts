import { Elysia } from 'elysia'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Deps } from '../../platform/context'
import { describe } from '../../platform/access'
import { API_PREFIX } from '../../platform/api'

/**
 * Swagger UI at /api/v1/docs, served from the pinned swagger-ui-dist package in node_modules: no
 * CDN, so the page works behind a firewall or offline. Public, and hidden from the OpenAPI document
 * it renders (documenting the page's own script files there would only be noise).
 */

const DOCS_PATH = `${API_PREFIX}/docs`
const SPEC_PATH = `${API_PREFIX}/openapi.json`
const DIST = dirname(fileURLToPath(import.meta.resolve('swagger-ui-dist/package.json')))
const VERSION: string = JSON.parse(readFileSync(join(DIST, 'package.json'), 'utf8')).version

// The package's own files, by the name they are served under. The version in their URLs (?v=) lets
// a browser keep them for a day and still fetch the new ones after an upgrade.
const VENDOR: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
}

// BaseLayout, not the package's StandaloneLayout: no top bar that loads any URL a visitor types.
// validatorUrl null: the default draws a badge fetched from validator.swagger.io.
// docExpansion none: tags start collapsed. Swagger UI 5.35 stops rendering when more than about 130
// operations are open at once (no error, the rest of the page never appears), and gpuhq has more;
// a tag opened on its own renders whole (tests/docs/swagger-ui.test.ts opens each in turn).
const INITIALIZER = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(SPEC_PATH)},
    dom_id: '#swagger-ui',
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    deepLinking: true,
    docExpansion: 'none',
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    validatorUrl: null,
  })
})
`

function page(): string {
  const v = encodeURIComponent(VERSION)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpuhq API</title>
<link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-32x32.png?v=${v}">
<link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css?v=${v}">
</head>
<body>
<noscript>The interactive reference needs JavaScript; the document itself is at <a href="${SPEC_PATH}">${SPEC_PATH}</a>.</noscript>
<div id="swagger-ui"></div>
<script src="${DOCS_PATH}/swagger-ui-bundle.js?v=${v}"></script>
<script src="${DOCS_PATH}/gpuhq-docs.js?v=${v}"></script>
</body>
</html>
`
}

export function docsRoutes(deps: Deps) {
  // Everything the page loads comes from this origin; "Try it out" calls PUBLIC_URL (the document's
  // server), which is this origin in a correct deployment. Swagger UI sets inline styles, hence
  // 'unsafe-inline' for styles only; scripts are files, never inline.
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ${new URL(deps.config.publicUrl).origin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
  const html = page()
  const hidden = (summary: string) => ({ detail: { ...describe({ public: true }, { tags: ['system'], summary }), hide: true } })
  const app = new Elysia({ name: 'docs' })
    .get(
      DOCS_PATH,
      () =>
        new Response(html, {
          headers: {
            'content-type': 'text/html; charset=utf-8',
            'cache-control': 'public, max-age=300',
            'content-security-policy': csp,
            'x-content-type-options': 'nosniff',
          },
        }),
      hidden('Interactive API reference (Swagger UI)'),
    )
    .get(
      `${DOCS_PATH}/gpuhq-docs.js`,
      () =>
        new Response(INITIALIZER, {
          headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' },
        }),
      hidden('Swagger UI settings for this service'),
    )
  for (const [name, type] of Object.entries(VENDOR))
    app.get(
      `${DOCS_PATH}/${name}`,
      () =>
        new Response(Bun.file(join(DIST, name)), {
          headers: { 'content-type': type, 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
        }),
      hidden(`Swagger UI ${VERSION}: ${name}`),
    )
  return app
}
