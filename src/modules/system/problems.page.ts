import { PROBLEM_CODES, type ProblemCode } from '../../platform/problem'

/** The short human page behind every problem `type` URI: `${PUBLIC_URL}/problems/<code>`. */
export function problemPage(code: ProblemCode, publicUrl: string): string {
  const p = PROBLEM_CODES[code]
  return page(
    `${p.title} · gpuhq`,
    `<p><a href="${publicUrl}/problems">All problem types</a></p>
<h1>${escapeHtml(p.title)}</h1>
<p><code>code: ${code}</code> · usual HTTP status <code>${p.status}</code></p>
<p>${escapeHtml(p.about)}</p>
<p>Every error from the gpuhq API is a problem document (<code>application/problem+json</code>, RFC 9457) whose
<code>type</code> is this page's address. Quote its <code>request_id</code> when you ask for help.</p>`,
  )
}

export function problemIndexPage(publicUrl: string): string {
  const rows = Object.entries(PROBLEM_CODES)
    .map(([code, p]) => `<tr><td><a href="${publicUrl}/problems/${code}"><code>${code}</code></a></td><td>${p.status}</td><td>${escapeHtml(p.title)}</td></tr>`)
    .join('\n')
  return page('Problem types · gpuhq', `<h1>Problem types</h1>\n<table><tr><th>code</th><th>status</th><th>title</th></tr>\n${rows}\n</table>`)
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .2em}td,th{padding:.2em .8em;text-align:left}</style>
</head><body>${body}</body></html>`
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)
}
