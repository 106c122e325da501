import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, get, newKey, type Page, request, type Query } from './api'

export type Resource<T> = {
  data: T | undefined
  error: ApiError | null
  loading: boolean
  reload: () => void
  /** Replace the data in place (after a write answered the new state). */
  set: (data: T) => void
}

const asApiError = (e: unknown) =>
  e instanceof ApiError ? e : new ApiError(0, { title: 'Something went wrong', status: 0, code: 'client', detail: (e as Error)?.message ?? String(e) })

/**
 * Loads `load()` now and whenever `deps` change; `reload()` loads again keeping what is shown, so a
 * refresh never blanks the page. An answer that arrives after a newer request started is dropped.
 */
export function useResource<T>(load: () => Promise<T>, deps: unknown[]): Resource<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; loading: boolean }>({ data: undefined, error: null, loading: true })
  const seq = useRef(0)
  const loadRef = useRef(load)
  loadRef.current = load
  const run = useCallback((keep: boolean) => {
    const n = ++seq.current
    setState((s) => ({ data: keep ? s.data : undefined, error: null, loading: true }))
    loadRef.current().then(
      (data) => n === seq.current && setState({ data, error: null, loading: false }),
      (e) => n === seq.current && setState((s) => ({ data: keep ? s.data : undefined, error: asApiError(e), loading: false })),
    )
  }, [])
  // The caller names what the load depends on (`deps`).
  useEffect(() => {
    run(false)
    return () => {
      seq.current++
    }
  }, deps)
  return {
    ...state,
    reload: useCallback(() => run(true), [run]),
    set: useCallback((data: T) => setState({ data, error: null, loading: false }), []),
  }
}

/** Calls `fn` every `ms` while the component is shown (and once the tab is visible again). */
export function useInterval(fn: () => void, ms: number | null): void {
  const ref = useRef(fn)
  ref.current = fn
  useEffect(() => {
    if (ms === null) return
    const t = setInterval(() => {
      if (document.visibilityState === 'visible') ref.current()
    }, ms)
    return () => clearInterval(t)
  }, [ms])
}

export { asApiError }

/**
 * A snapshot read (GET /servers, /dashboard, a server's detail): `refresh()` asks again with
 * If-None-Match when the answer had an ETag, so a live tick costs a 304 while nothing changed. A failed refresh keeps what is
 * shown (the next tick tries again).
 */
export function useSnapshot<T>(path: string, query: Query, deps: unknown[]): Resource<T> & { refresh: () => Promise<void> } {
  const etag = useRef<string | null>(null)
  const args = useRef({ path, query })
  args.current = { path, query }
  const r = useResource(async () => {
    etag.current = null
    const a = await request<T>('GET', args.current.path, { query: args.current.query })
    etag.current = a.etag
    return a.data
  }, deps)
  const set = r.set
  const refresh = useCallback(async () => {
    try {
      // Without a tag (an answer that carries none) the read is simply made again.
      const a = await request<T>('GET', args.current.path, { query: args.current.query, ifNoneMatch: etag.current })
      if (a.status === 304) return
      etag.current = a.etag
      set(a.data)
    } catch {}
  }, [set])
  return { ...r, refresh }
}

/** A paginated list (docs/conventions.md "Pagination"): the first page, and `more()` for the next. */
export function usePaged<T>(path: string, query: Query, deps: unknown[]): Resource<Page<T>> & { more: (cursor: string) => Promise<void> } {
  const r = useResource(() => get<Page<T>>(path, query), deps)
  return {
    ...r,
    more: async (cursor) => {
      const next = await get<Page<T>>(path, { ...query, cursor })
      r.set({ items: [...(r.data?.items ?? []), ...next.items], next_cursor: next.next_cursor })
    },
  }
}

/**
 * Idempotency-Key for a form: the same key while the member retries the same body (a lost answer is
 * then replayed, never done twice), a new one once the body changes or the write succeeded.
 */
export function useIdempotency(): { keyFor: (body: unknown) => string; done: () => void } {
  const ref = useRef<{ body: string; key: string } | null>(null)
  return {
    keyFor: (body) => {
      const b = JSON.stringify(body)
      if (ref.current?.body !== b) ref.current = { body: b, key: newKey() }
      return ref.current.key
    },
    done: () => {
      ref.current = null
    },
  }
}
