import type { Presence } from '../lib/api-types'

/** Status words in colour; the word itself always says it, so colour is never the only cue. */

const PRESENCE: Record<Presence, string> = { online: 'ok', suspect: 'warn', offline: 'bad' }

export const PresenceBadge = ({ presence }: { presence: Presence }) => <span class={`badge ${PRESENCE[presence]}`}>{presence}</span>

const TONES: Record<string, string> = {
  succeeded: 'ok',
  connected: 'ok',
  linked: 'ok',
  accepted: 'ok',
  applied: 'ok',
  active: 'ok',
  sent: 'info',
  running: 'info',
  queued: 'info',
  routing: 'info',
  creating: 'info',
  scheduled: 'info',
  pending: 'info',
  awaiting_payment: 'warn',
  partially_paid: 'warn',
  review: 'warn',
  stale: 'warn',
  paused: 'warn',
  grace: 'warn',
  acknowledged: 'warn',
  warning: 'warn',
  open: 'bad',
  failed: 'bad',
  expired: 'bad',
  delivery_failed: 'bad',
  invalid_key: 'bad',
  conflict: 'bad',
  frozen: 'bad',
  refused: 'bad',
  error: 'bad',
  critical: 'bad',
}

/** Words a host reads better than the wire's status name (a top-up `creating` waits for its payment). */
const WORDS: Record<string, string> = { creating: 'waiting for payment' }

export const StatusBadge = ({ status }: { status: string }) => (
  <span class={`badge ${TONES[status] ?? ''}`} data-status={status}>
    {WORDS[status] ?? status.replaceAll('_', ' ')}
  </span>
)

/**
 * A dotted name (an event kind, a command type): it may wrap after a dot or an underscore on a
 * narrow screen, never inside a word.
 */
export function DottedName({ name }: { name: string }) {
  const parts = name.split(/(?<=[._])/)
  return (
    <code class="dotted">
      {parts.map((p, i) => (
        <>
          {i > 0 && <wbr />}
          {p}
        </>
      ))}
    </code>
  )
}
