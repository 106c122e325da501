import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { dateTime, marketplaceName } from '../lib/format'
import { useLive } from '../lib/live'
import { useIdempotency, useResource } from '../lib/resource'
import { can } from '../lib/session'
import type { Drain, DrainCreateBody } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Form, SelectField, TextField, useForm } from '../ui/form'
import { Section } from '../ui/layout'
import { Action, Async } from '../ui/states'

/**
 * The drain in the console (docs/marketplaces.md "Drain"): on the server page, "Drain for
 * maintenance" and where the drain stands, with its cancel; on the fleet page, a badge per server
 * being drained.
 */

const LIVE = ['draining', 'awaiting_rental_end', 'working', 'relisting']
const SAYS: Record<Drain['state'], string> = {
  draining: 'Taking the offers off the market…',
  awaiting_rental_end: 'Offers are off. Waiting for the running rentals to end (none is cut).',
  working: 'No rental runs: the queued work runs now.',
  relisting: 'The work is done: publishing the kept offers again.',
  done: 'Done: the server is back on the market.',
  cancelled: 'Cancelled: the listing was restored.',
  failed: 'Failed.',
}
/** Commands a host queues for a drain most often; anything else goes through Commands with requires after_rental. */
const WORK: [string, string][] = [
  ['', 'Nothing: only take it off the market'],
  ['docker.restart', 'Restart the container runtime'],
  ['agent.restart', 'Restart the agent'],
  ['reboot', 'Reboot the host'],
]

const isLive = (d: Drain) => LIVE.includes(d.state)

function DrainState({ d, reload }: { d: Drain; reload: () => void }) {
  return (
    <div data-drain={d.id} data-drain-state={d.state}>
      <p aria-live="polite">
        <StatusBadge status={d.state} /> {SAYS[d.state]}
        {d.reason ? <span class="muted"> ({d.reason})</span> : null}
      </p>
      {d.failure && (
        <p class="inline-error" role="alert">
          {d.failure}
        </p>
      )}
      <ul>
        {d.links.map((l) => (
          <li key={l.marketplace}>
            {marketplaceName(l.marketplace)}: {l.withdrawn ? 'offer withdrawn' : 'offer not touched'}
            {l.window_announced ? `; window announced from ${dateTime(d.window.starts_at)} for ${d.window.hours} h` : ''}
            {l.relisted ? '; relisted' : ''}
            {l.note && <div class="muted small">{l.note}</div>}
          </li>
        ))}
        {d.links.length === 0 && <li class="muted">Not linked to a marketplace: nothing to take off.</li>}
        {d.commands.map((c) => (
          <li key={c.command_id}>
            <code>{c.type}</code> <StatusBadge status={c.execution_status} />
          </li>
        ))}
      </ul>
      {isLive(d) && can('admin') && (
        <Action
          label="Cancel the drain"
          confirm="Cancel the drain? The offers are published again and the window cancelled."
          run={async () => {
            await request('POST', `/drains/${d.id}/cancel`)
            reload()
          }}
        />
      )}
    </div>
  )
}

function StartDrain({ serverId, started }: { serverId: string; started: () => void }) {
  const form = useForm()
  const idem = useIdempotency()
  const [reason, setReason] = useState('')
  const [work, setWork] = useState('')
  return (
    <Form
      form={form}
      class="form inline"
      label="Drain for maintenance"
      submit="Drain for maintenance"
      onSubmit={async () => {
        const body: DrainCreateBody = { reason: reason.trim() || null, commands: work ? [{ type: work, params: {} }] : [] }
        await request('POST', `/servers/${serverId}/drain`, { body, idempotencyKey: idem.keyFor(body) })
        idem.done()
        setReason('')
        started()
      }}
    >
      <TextField form={form} name="/reason" label="What for (optional)" value={reason} onInput={setReason} />
      <SelectField form={form} name="/commands/0/type" label="Then run" value={work} onChange={setWork} options={WORK} />
    </Form>
  )
}

/** The server page's "Drain" section. */
export function ServerDrain({ serverId, decommissioned }: { serverId: string; decommissioned: boolean }) {
  const r = useResource(() => get<{ items: Drain[] }>('/drains', { server_id: serverId, limit: 1 }), [serverId])
  useLive(() => r.reload())
  return (
    <Section title="Drain">
      <div id="drain">
        <p class="muted">
          Takes the server off the market without cutting a rental: the offers come off (and renters are told of the window where the marketplace can), the work
          runs once the last rental ended, then the offers go back.
        </p>
        <Async r={r} label="Loading the drain…">
          {(d) => {
            const last = d.items[0]
            return (
              <>
                {last && <DrainState d={last} reload={r.reload} />}
                {(!last || !isLive(last)) && can('admin') && !decommissioned && <StartDrain serverId={serverId} started={r.reload} />}
              </>
            )
          }}
        </Async>
      </div>
    </Section>
  )
}

/** The drains not finished, by server (the fleet page's badge). */
export function useLiveDrains(): Map<string, Drain> {
  const r = useResource(() => get<{ items: Drain[] }>('/drains', { live: true, limit: 200 }).catch(() => ({ items: [] as Drain[] })), [])
  useLive(() => r.reload())
  return new Map((r.data?.items ?? []).map((d) => [d.server_id, d]))
}

export function DrainBadge({ d }: { d: Drain | undefined }) {
  if (!d) return null
  return (
    <span class="badge warn" data-drain-state={d.state} title={SAYS[d.state]}>
      drain: {d.state.replaceAll('_', ' ')}
    </span>
  )
}
