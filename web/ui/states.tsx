import type { ComponentChildren, JSX } from 'preact'
import { useState } from 'preact/hooks'
import type { ApiError, Page } from '../lib/api'
import { problemMessage } from '../lib/messages'
import { asApiError, type Resource } from '../lib/resource'

/** Loading, empty and error states: every list and panel shows one of them instead of nothing. */

export const Loading = ({ label = 'Loading…' }: { label?: string }) => (
  <p class="state loading" role="status">
    {label}
  </p>
)

export const Empty = ({ children }: { children: ComponentChildren }) => <div class="state empty">{children}</div>

export function ErrorNote({ error, retry }: { error: ApiError; retry?: () => void }) {
  return (
    <div class="state error" role="alert">
      <p>{problemMessage(error)}</p>
      {error.problem.request_id && <p class="muted small">Request id {error.problem.request_id}</p>}
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  )
}

/** The data once it is there; meanwhile the loading state, or the error with a retry. */
export function Async<T>({ r, children, label }: { r: Resource<T>; children: (data: T) => JSX.Element | null; label?: string }) {
  if (r.data === undefined) return r.error ? <ErrorNote error={r.error} retry={r.reload} /> : <Loading label={label} />
  return (
    <>
      {r.error && <ErrorNote error={r.error} retry={r.reload} />}
      {children(r.data)}
    </>
  )
}

/**
 * A button that calls the API: busy while it runs, its refusal shown beside it. `confirm` asks
 * first (for what cannot be undone).
 */
export function Action(props: {
  label: string
  busyLabel?: string
  run: () => Promise<unknown>
  confirm?: string
  class?: string
  disabled?: boolean
  describedBy?: string
}) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ApiError | null>(null)
  return (
    <span class="action">
      <button
        type="button"
        class={props.class}
        disabled={busy || props.disabled}
        aria-busy={busy}
        aria-describedby={props.describedBy}
        onClick={async () => {
          if (props.confirm && !window.confirm(props.confirm)) return
          setBusy(true)
          setError(null)
          try {
            await props.run()
          } catch (e) {
            setError(asApiError(e))
          } finally {
            setBusy(false)
          }
        }}
      >
        {busy ? (props.busyLabel ?? 'Working…') : props.label}
      </button>
      {error && (
        <span class="inline-error" role="alert">
          {problemMessage(error)}
        </span>
      )}
    </span>
  )
}

/** A table that scrolls sideways on a narrow screen; focusable so the keyboard can scroll it too. */
export const TableWrap = ({ label, children }: { label: string; children: ComponentChildren }) => (
  <section class="table-wrap" aria-label={label} tabindex={0}>
    {children}
  </section>
)

/** A table under TableWrap: `head` the header cells of its one header row, `children` its rows. */
export const DataTable = ({ label, head, children }: { label: string; head: ComponentChildren; children: ComponentChildren }) => (
  <TableWrap label={label}>
    <table>
      <thead>
        <tr>{head}</tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  </TableWrap>
)

/** "Load more" under a paginated list. */
export function More({ cursor, load }: { cursor: string | null; load: (cursor: string) => Promise<void> }) {
  if (!cursor) return null
  return <Action label="Load more" busyLabel="Loading…" run={() => load(cursor)} class="more" />
}

/** A resource of usePaged (web/lib/resource.ts): a first page, and `more` for the next. */
type PagedResource<T> = Resource<Page<T>> & { more: (cursor: string) => Promise<void> }

/** A paginated list: its loading and error states, a line when it is empty, its items, and "Load more". */
export function Paged<T>({
  r,
  loading,
  empty,
  children,
}: {
  r: PagedResource<T>
  loading: string
  empty: ComponentChildren
  children: (items: T[]) => JSX.Element
}) {
  return (
    <Async r={r} label={loading}>
      {(page) =>
        page.items.length === 0 ? (
          <Empty>{empty}</Empty>
        ) : (
          <>
            {children(page.items)}
            <More cursor={page.next_cursor} load={r.more} />
          </>
        )
      }
    </Async>
  )
}

/** A paginated list as a table: `head` the header cells, `row` one item's row. */
export function PagedTable<T>(props: {
  r: PagedResource<T>
  loading: string
  empty: ComponentChildren
  label: string
  head: ComponentChildren
  row: (item: T) => JSX.Element
}) {
  return (
    <Paged r={props.r} loading={props.loading} empty={props.empty}>
      {(items) => (
        <DataTable label={props.label} head={props.head}>
          {items.map(props.row)}
        </DataTable>
      )}
    </Paged>
  )
}
