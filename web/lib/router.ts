import { signal } from '@preact/signals'

/**
 * Routes live in the fragment (`/#/servers/…`): the service serves one page at `/`, and a fragment
 * never reaches a server log or a Referer. Nothing secret is ever put into a route.
 */

const current = () => location.hash.replace(/^#/, '') || '/'

export const route = signal(current())

addEventListener('hashchange', () => {
  route.value = current()
})

export function navigate(to: string): void {
  if (current() === to) return
  location.hash = to
}

/** `/servers/:id` against `/servers/abc` → { id: 'abc' }, or null. Query strings are ignored. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/')
  const a = path.split('?')[0]!.split('/')
  if (p.length !== a.length) return null
  const params: Record<string, string> = {}
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(':')) params[p[i]!.slice(1)] = decodeURIComponent(a[i]!)
    else if (p[i] !== a[i]) return null
  }
  return params
}

export const href = (to: string) => `#${to}`
