import { join } from 'node:path'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { TEMPERATURE_MARKS } from '../notifications'

/**
 * The web console's bundle (docs/console.md): web/main.tsx built by Bun's own bundler from the
 * pinned packages, in memory, when the service starts. Nothing is written to disk and nothing is
 * fetched at run time, so `scripts/start` (and the Docker image) stay one command with no build
 * step that could go stale. Asset names carry a content hash, so they can be cached for a year.
 */

const WEB = join(import.meta.dir, '../../../web')

type Asset = { type: string; body: Uint8Array; encoded: Partial<Record<'zstd' | 'br' | 'gzip', Uint8Array>> }
export type ConsoleBundle = { html: string; assets: Map<string, Asset> }

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
}

async function encode(body: Uint8Array): Promise<Asset['encoded']> {
  // Built once per process: the best compression levels cost nothing per request.
  return {
    zstd: await Bun.zstdCompress(body, { level: 19 }),
    br: new Uint8Array(brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } })),
    gzip: new Uint8Array(gzipSync(body, { level: 9 })),
  }
}

const hashName = (name: string, body: Uint8Array) => {
  const dot = name.lastIndexOf('.')
  return `${name.slice(0, dot)}-${Bun.hash(body).toString(36)}${name.slice(dot)}`
}

function page(names: { js: string; css: string; icon: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="same-origin">
<title>gpuhq</title>
<link rel="icon" type="image/svg+xml" href="/app/${names.icon}">
<link rel="stylesheet" href="/app/${names.css}">
<script type="module" src="/app/${names.js}"></script>
</head>
<body>
<div id="app"><p class="boot" role="status">Loading the gpuhq console…</p></div>
<noscript><p class="boot">The gpuhq console needs JavaScript. The API works without it: see <a href="/api/v1/docs">/api/v1/docs</a>.</p></noscript>
</body>
</html>
`
}

async function build(): Promise<ConsoleBundle> {
  const result = await Bun.build({
    entrypoints: [join(WEB, 'main.tsx')],
    target: 'browser',
    format: 'esm',
    minify: true,
    sourcemap: 'none',
    naming: { entry: '[name]-[hash].[ext]', chunk: '[name]-[hash].[ext]', asset: '[name]-[hash].[ext]' },
    jsx: { runtime: 'automatic', importSource: 'preact', development: false },
    // The marks the alerts judge a GPU by (a hot card opens a critical incident at highC), so the
    // fleet page flags a row by the same numbers and never by figures of its own (web/env.d.ts).
    define: {
      'process.env.NODE_ENV': '"production"',
      __GPUHQ_HOT_C__: String(TEMPERATURE_MARKS.highC),
      __GPUHQ_COOL_C__: String(TEMPERATURE_MARKS.lowC),
    },
    throw: false,
  })
  if (!result.success) throw new Error(`the web console did not build: ${result.logs.map((l) => l.message).join('; ')}`)
  const assets = new Map<string, Asset>()
  const names = { js: '', css: '', icon: '' }
  const add = async (name: string, body: Uint8Array) => {
    const ext = name.slice(name.lastIndexOf('.') + 1)
    assets.set(name, { type: TYPES[ext] ?? 'application/octet-stream', body, encoded: await encode(body) })
  }
  for (const out of result.outputs) {
    const name = out.path.replace(/^.*\//, '')
    await add(name, new Uint8Array(await out.arrayBuffer()))
    if (out.kind === 'entry-point') names.js = name
    else if (name.endsWith('.css')) names.css = name
  }
  const icon = new Uint8Array(await Bun.file(join(WEB, 'icon.svg')).arrayBuffer())
  names.icon = hashName('icon.svg', icon)
  await add(names.icon, icon)
  if (!names.js || !names.css) throw new Error('the web console build produced no script or no stylesheet')
  return { html: page(names), assets }
}

// One build per process, shared by every app the process creates (the test suite builds many):
// the bundle depends only on files on disk, never on a tenant, a request or the configuration.
let built: Promise<ConsoleBundle> | undefined

/** The console's bundle, built on first use (src/main.ts asks for it at start). */
export function consoleBundle(): Promise<ConsoleBundle> {
  built ??= build()
  return built
}
