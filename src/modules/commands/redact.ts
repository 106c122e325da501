/**
 * What may be kept of text an agent sends: secrets are masked (gpuhq credentials, bearer tokens,
 * key=value pairs whose key says secret) and the size is bounded.
 */
const RULES: [RegExp, string | ((m: string, ...g: string[]) => string)][] = [
  [/gpuhq_(pat|init|agt|mcp)_[0-9A-Za-z]+/g, 'gpuhq_$1_[REDACTED]'],
  [/(bearer\s+)[^\s"']+/gi, '$1[REDACTED]'],
  [/\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;]+)/gi, '$1$2[REDACTED]'],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g, '[REDACTED PRIVATE KEY]'],
]

export function redactText(text: string): string {
  let out = text
  for (const [re, rep] of RULES) out = out.replace(re, rep as string)
  return out
}

/** Keys that carry a program's raw output, which never belongs in an error (it goes to the log). */
const RAW_OUTPUT_KEY = /^(stdout|stderr|output|raw_output)$/i

/** Bounded, redacted copy of a small JSON object (error details): primitives only, at most 16 keys, no raw output. */
export function boundedDetails(details: unknown): Record<string, string | number | boolean | null> | null {
  if (!details || typeof details !== 'object' || Array.isArray(details)) return null
  const out: Record<string, string | number | boolean | null> = {}
  for (const [k, v] of Object.entries(details).slice(0, 16)) {
    if (RAW_OUTPUT_KEY.test(k)) continue
    const key = k.slice(0, 64)
    if (typeof v === 'string') out[key] = redactText(v).slice(0, 256)
    else if (typeof v === 'number' && Number.isFinite(v)) out[key] = v
    else if (typeof v === 'boolean' || v === null) out[key] = v
  }
  return out
}
