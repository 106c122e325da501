/**
 * Text that both databases store alike (docs/conventions.md "Characters no database stores"):
 * PostgreSQL's `text` and `jsonb` refuse U+0000 (NUL), and a UTF-16 surrogate without its pair has
 * no UTF-8 form at all (PostgreSQL refuses it, SQLite would keep a replacement character). Such text
 * is refused where a request enters (src/platform/http.ts: JSON and form bodies, query strings,
 * path parameters; agent frames in src/modules/agent), with 422 `invalid_character`, so no text of
 * the kind reaches a query on either database.
 */
const UNSTORABLE_SOURCE = '\\u0000|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]'
const UNSTORABLE = new RegExp(UNSTORABLE_SOURCE)
const UNSTORABLE_ALL = new RegExp(UNSTORABLE_SOURCE, 'g')

/**
 * Whether a JSON text can hold such a character once parsed. JSON strings cannot carry a raw U+0000
 * (JSON.parse refuses control characters) and a text decoded as UTF-8 holds no lone surrogate, so
 * only the escapes `\u0000` and `\ud800`–`\udfff` bring one in: a text without them needs no walk.
 */
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f])/i
export function jsonTextMayHoldUnstorable(text: string): boolean {
  return UNSTORABLE_ESCAPE.test(text)
}

function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text)
}

/** Longest pointer reported: the FieldError schema's maxLength. A deeper offender is reported at its deepest ancestor that fits. */
const MAX_POINTER = 512

/**
 * The JSON Pointer of the first string in `value` (a string value, or an object key) that holds such
 * a character, or null when there is none. A key points at its object. Walked with an explicit stack:
 * bodies are depth-limited already (json-depth.ts), but this walk must not depend on it.
 */
export function unstorablePointer(value: unknown): string | null {
  const stack: { value: unknown; pointer: string }[] = [{ value, pointer: '' }]
  while (stack.length) {
    const { value: v, pointer } = stack.pop()!
    if (typeof v === 'string') {
      if (!isStorableText(v)) return pointer
      continue
    }
    if (v === null || typeof v !== 'object') continue
    const entries: [string, unknown][] = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v)
    const inner: { value: unknown; pointer: string }[] = []
    for (const [key, x] of entries) {
      if (!Array.isArray(v) && !isStorableText(key)) return pointer
      inner.push({ value: x, pointer: childPointer(pointer, key) })
    }
    // Reversed onto the stack so the first member is examined first.
    for (let i = inner.length - 1; i >= 0; i--) stack.push(inner[i]!)
  }
  return null
}

function childPointer(parent: string, key: string): string {
  const child = `${parent}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`
  return child.length <= MAX_POINTER ? child : parent
}

/**
 * What an agent reports is kept, not refused (docs/agent.md): in `value`'s strings and keys, in
 * place, U+0000 is removed (as every control character is from what an agent names, text.ts) and a
 * lone surrogate becomes U+FFFD. Iterative, for frames are not depth-limited.
 */
export function replaceUnstorable<T>(value: T): T {
  const fix = (text: string) => text.replace(UNSTORABLE_ALL, (c) => (c === '\u0000' ? '' : '\ufffd'))
  if (typeof value === 'string') return fix(value) as T
  const stack: unknown[] = [value]
  while (stack.length) {
    const v = stack.pop()
    if (v === null || typeof v !== 'object') continue
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        if (typeof v[i] === 'string') v[i] = fix(v[i])
        else stack.push(v[i])
      }
      continue
    }
    const o = v as Record<string, unknown>
    for (const key of Object.keys(o)) {
      let inner = o[key]
      if (typeof inner === 'string') inner = o[key] = fix(inner)
      else stack.push(inner)
      if (!isStorableText(key)) {
        delete o[key]
        o[fix(key)] = inner
      }
    }
  }
  return value
}
