import { effect, signal } from '@preact/signals'

/** The colour scheme: the system's (prefers-color-scheme) unless the member picked one here. */
export type Theme = 'system' | 'light' | 'dark'

const KEY = 'gpuhq.theme'
const stored = (): Theme => {
  const v = localStorage.getItem(KEY)
  return v === 'light' || v === 'dark' ? v : 'system'
}

export const theme = signal<Theme>(stored())

effect(() => {
  const t = theme.value
  if (t === 'system') {
    delete document.documentElement.dataset.theme
    localStorage.removeItem(KEY)
  } else {
    document.documentElement.dataset.theme = t
    localStorage.setItem(KEY, t)
  }
})
