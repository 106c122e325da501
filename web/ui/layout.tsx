import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { href, route } from '../lib/router'
import { me, signOut } from '../lib/session'
import { theme, type Theme } from '../lib/theme'

/** The frame of every signed-in page: skip link, header with the navigation, the page's <main>. */

const NAV: [string, string][] = [
  ['/', 'Fleet'],
  ['/commands', 'Commands'],
  ['/alerts', 'Alerts'],
  ['/marketplaces', 'Marketplaces'],
  ['/earnings', 'Earnings'],
  ['/reports', 'Reports'],
  ['/strategy', 'Strategy'],
  ['/billing', 'Billing'],
  ['/settings', 'Settings'],
]

/** Pages reached from Settings (profile, theme, notifications, tokens, AI access) light up its tab. */
const UNDER_SETTINGS = new Set(['/notifications', '/tokens', '/ai'])

const section = (path: string) => {
  const p = path.split('?')[0]!
  if (p === '/' || p.startsWith('/servers') || p === '/add-server') return '/'
  const top = `/${p.split('/')[1]}`
  // Payouts reconciled is reached from Earnings and lights up its tab.
  if (top === '/reconciliation') return '/earnings'
  return UNDER_SETTINGS.has(top) ? '/settings' : top
}

export function ThemePicker() {
  return (
    <label class="theme-picker">
      <span>Theme</span>
      <select value={theme.value} onChange={(e) => (theme.value = e.currentTarget.value as Theme)}>
        <option value="system">System</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  )
}

export function Shell({ children }: { children: ComponentChildren }) {
  const [open, setOpen] = useState(false)
  const here = section(route.value)
  useEffect(() => setOpen(false), [route.value])
  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <a class="brand" href={href('/')}>
          gpuhq
        </a>
        <button type="button" class="menu-toggle" aria-expanded={open} aria-controls="nav" onClick={() => setOpen(!open)}>
          Menu
        </button>
        <nav id="nav" aria-label="Main" class={open ? 'open' : ''}>
          <ul>
            {NAV.map(([to, label]) => (
              <li key={to}>
                <a href={href(to)} aria-current={here === to ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="account">
          <a class="who" href={href('/settings')} title={`${me.value?.email ?? ''}: profile and settings`}>
            {me.value?.display_name ?? me.value?.email}
          </a>
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabindex={-1}>
        {children}
      </main>
    </>
  )
}

/** A page's title: the <h1>, the document title, and the focus after navigating (for screen readers). */
export function Page({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const h = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    document.title = `${title} · gpuhq`
    if (document.activeElement === document.body || document.activeElement?.closest('nav, .skip')) h.current?.focus()
  }, [title])
  return (
    <>
      <div class="page-head">
        <h1 ref={h} tabindex={-1}>
          {title}
        </h1>
        {actions && <div class="page-actions">{actions}</div>}
      </div>
      {children}
    </>
  )
}

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')

/** A panel of a page, named by its <h2> for landmarks and screen readers. */
export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = `s-${slug(title)}`
  return (
    <section class="panel" aria-labelledby={id}>
      <div class="panel-head">
        <h2 id={id}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  )
}
