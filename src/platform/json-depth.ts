/**
 * The nesting limit of JSON bodies (docs/conventions.md): objects and arrays may nest at most
 * MAX_JSON_DEPTH levels. Checked on the raw text before JSON.parse, in one linear pass with no
 * recursion, so a 1 MiB body of brackets costs milliseconds and never reaches a recursive step
 * (validation, canonical JSON) that could overflow the stack.
 */
export const MAX_JSON_DEPTH = 64

const OPEN_OBJECT = 0x7b // {
const OPEN_ARRAY = 0x5b // [
const CLOSE_OBJECT = 0x7d // }
const CLOSE_ARRAY = 0x5d // ]
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const COMMA = 0x2c

/**
 * Returns null when `text` nests at most `max` levels, else the JSON Pointer of the first value
 * that goes deeper (the container opened at depth max + 1). Malformed text is left to JSON.parse:
 * this pass only counts brackets outside strings and remembers the keys and indices on the way.
 */
export function excessiveDepthPointer(text: string, max = MAX_JSON_DEPTH): string | null {
  // Fast path: a text with at most `max` brackets cannot nest deeper than `max`.
  let brackets = 0
  for (let i = 0; i < text.length && brackets <= max; i++) {
    const c = text.charCodeAt(i)
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) brackets++
  }
  if (brackets <= max) return null

  const path: (string | number)[] = []
  const isArray: boolean[] = []
  let lastString: { start: number; end: number } | null = null
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      const start = i
      i++
      while (i < text.length && text.charCodeAt(i) !== QUOTE) i += text.charCodeAt(i) === BACKSLASH ? 2 : 1
      lastString = { start, end: i + 1 }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (path.length >= max) return pointer(path)
      isArray.push(c === OPEN_ARRAY)
      path.push(c === OPEN_ARRAY ? 0 : '')
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      path.pop()
      isArray.pop()
    } else if (c === COLON && path.length && !isArray[isArray.length - 1] && lastString) {
      path[path.length - 1] = keyOf(text.slice(lastString.start, lastString.end))
    } else if (c === COMMA && path.length && isArray[isArray.length - 1]) {
      path[path.length - 1] = (path[path.length - 1] as number) + 1
    }
  }
  return null
}

function keyOf(quoted: string): string {
  try {
    return String(JSON.parse(quoted))
  } catch {
    return quoted.slice(1, -1)
  }
}

function pointer(path: (string | number)[]): string {
  return path.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('')
}
