import { signal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'

/**
 * Live updates. The console follows `GET /api/v1/events/stream` (Server-Sent Events, the session
 * cookie, `Last-Event-ID` to resume; docs/events.md) and hands each event to the pages listening.
 * Pages treat an event as "something changed" and read their snapshot again with its ETag, which
 * answers 304 while nothing changed, so they never depend on an event's exact payload.
 *
 * Where the stream is not there (404: a service without it) or while it is down, the console
 * polls instead: every listener gets a `poll` tick every few seconds and does the same cheap
 * conditional read. The fleet snapshot is rebuilt at once on every presence transition
 * (docs/fleet.md), so polling shows a server going online within one tick.
 */

type LiveEvent = { type: string; id: string | null; data: unknown }
type Listener = (e: LiveEvent) => void

export type LiveMode = 'connecting' | 'stream' | 'polling'
export const liveMode = signal<LiveMode>('connecting')

const STREAM = '/api/v1/events/stream'
const POLL_MS = 4000
const listeners = new Set<Listener>()
let controller: AbortController | null = null
let pollTimer: ReturnType<typeof setInterval> | null = null
let retryTimer: ReturnType<typeof setTimeout> | null = null
let lastId: string | null = null
let streamMissing = false
let failures = 0

const emit = (e: LiveEvent) => {
  for (const l of [...listeners]) l(e)
}

function startPolling() {
  liveMode.value = 'polling'
  pollTimer ??= setInterval(() => {
    if (document.visibilityState === 'visible') emit({ type: 'poll', id: null, data: null })
  }, POLL_MS)
}

function stopPolling() {
  if (pollTimer) clearInterval(pollTimer)
  pollTimer = null
}

/** Parses one event block of the text/event-stream format (WHATWG HTML §9.2.6). */
function parseBlock(block: string): LiveEvent | null {
  let type = 'message'
  let id: string | null = null
  const data: string[] = []
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue
    const i = line.indexOf(':')
    const field = i < 0 ? line : line.slice(0, i)
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '')
    if (field === 'event') type = value
    else if (field === 'data') data.push(value)
    else if (field === 'id' && !value.includes('\0')) id = value
  }
  if (id !== null) lastId = id
  if (data.length === 0) return null
  const text = data.join('\n')
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {}
  return { type, id, data: parsed }
}

/**
 * Opens the stream, replacing any before it. One stream at a time: over HTTP/1.1 a browser keeps
 * six connections per origin, and a stream nobody aborts holds one for good, so a few leaked ones
 * leave every later request of the page queued forever. Each connection owns its controller; a
 * connection that was stopped or replaced leaves the retry to whatever replaced it.
 */
async function connect() {
  if (streamMissing || listeners.size === 0) return
  controller?.abort()
  const own = new AbortController()
  controller = own
  const current = () => controller === own && !own.signal.aborted
  try {
    const res = await fetch(STREAM, {
      headers: { accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
      credentials: 'same-origin',
      signal: own.signal,
    })
    if (!current()) {
      await res.body?.cancel()
      return
    }
    if (res.status === 404 || res.status === 405 || res.status === 501) {
      streamMissing = true
      startPolling()
      return
    }
    if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`)
    liveMode.value = 'stream'
    stopPolling()
    failures = 0
    // Whatever happened while we were away: everyone reads again once.
    emit({ type: 'resync', id: null, data: null })
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ''
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += value
      let end = buffer.search(/\r?\n\r?\n/)
      while (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(buffer.slice(end).match(/^\r?\n\r?\n/)![0].length + end)
        const event = parseBlock(block)
        if (event) emit(event)
        end = buffer.search(/\r?\n\r?\n/)
      }
    }
    throw new Error('stream ended')
  } catch {
    if (!current()) return
    controller = null
    failures++
    startPolling()
    const delay = Math.min(30_000, 1000 * 2 ** Math.min(failures, 5))
    if (retryTimer) clearTimeout(retryTimer)
    retryTimer = setTimeout(() => {
      retryTimer = null
      void connect()
    }, delay)
  }
}

function stop() {
  controller?.abort()
  controller = null
  if (retryTimer) clearTimeout(retryTimer)
  retryTimer = null
  stopPolling()
  liveMode.value = 'connecting'
}

/** Calls `fn` on every live event (and every polling tick) while the component is shown. */
export function useLive(fn: Listener): void {
  const ref = useRef(fn)
  ref.current = fn
  useEffect(() => {
    const l: Listener = (e) => ref.current(e)
    listeners.add(l)
    if (listeners.size === 1) {
      if (streamMissing) startPolling()
      else void connect()
    }
    return () => {
      listeners.delete(l)
      if (listeners.size === 0) stop()
    }
  }, [])
}

/**
 * Telemetry is not on the event stream (a sample every few seconds per GPU would drown it), so
 * pages that show vitals also read again on this cadence: the agents' default telemetry interval.
 */
export const VITALS_REFRESH_MS = 10_000

export const liveLabel = (mode: LiveMode) =>
  mode === 'stream' ? 'Live' : mode === 'polling' ? `Updated every ${POLL_MS / 1000} s` : 'Connecting to live updates…'
