import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { ago, marketplaceName } from '../lib/format'
import { useLive } from '../lib/live'
import { usePaged, useResource } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { Incident, ResolveBody, ServerRow } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Form, TextField, useForm } from '../ui/form'
import { Page, Section } from '../ui/layout'
import { Action, PagedTable } from '../ui/states'

/** Alert incidents (docs/alerts.md): open and acknowledged first, acknowledge, resolve with a note. */

function Resolve({ incident, done }: { incident: Incident; done: () => void }) {
  const form = useForm()
  const [note, setNote] = useState('')
  return (
    <details>
      <summary>
        Resolve<span class="visually-hidden"> {incident.title}</span>
      </summary>
      <Form
        form={form}
        label={`Resolve ${incident.title}`}
        submit="Resolve"
        onSubmit={async () => {
          await request('POST', `/alerts/${incident.id}/resolve`, { body: (note.trim() ? { note: note.trim() } : {}) satisfies ResolveBody })
          done()
        }}
      >
        <TextField form={form} name="/note" label="Note (optional)" value={note} onInput={setNote} />
      </Form>
    </details>
  )
}

export function AlertsPage() {
  const [state, setState] = useState('unresolved')
  const list = usePaged<Incident>('/alerts', { state, limit: 50 }, [state])
  const servers = useResource(() => get<{ items: ServerRow[] }>('/servers', { limit: 200 }), [])
  useLive((e) => {
    if (e.type === 'poll' || e.type === 'resync' || e.type.startsWith('alert.')) list.reload()
  })
  const name = (id: string | null) => (id ? (servers.data?.items.find((s) => s.id === id)?.name ?? id.slice(0, 8)) : 'account')
  return (
    <Page title="Alerts">
      <Section
        title="Incidents"
        actions={
          <div class="field">
            <label for="alert-state">Show</label>
            <select id="alert-state" value={state} onChange={(e) => setState(e.currentTarget.value)}>
              <option value="unresolved">Open and acknowledged</option>
              <option value="open">Open</option>
              <option value="acknowledged">Acknowledged</option>
              <option value="resolved">Resolved</option>
              <option value="">All</option>
            </select>
          </div>
        }
      >
        <PagedTable
          r={list}
          loading="Loading the incidents…"
          empty={state === 'unresolved' ? 'Nothing needs attention: no open incident.' : 'No incidents.'}
          label="Incidents"
          head={
            <>
              <th scope="col">Incident</th>
              <th scope="col">Severity</th>
              <th scope="col">State</th>
              <th scope="col">Of</th>
              <th scope="col">Opened</th>
              {can('operator') && <th scope="col">Actions</th>}
            </>
          }
          row={(a) => (
            <tr key={a.id}>
              <td class="text">
                <strong>{a.title}</strong>
                <br />
                <span class="small">{a.detail}</span>
                {a.occurrences > 1 && <span class="muted small"> (seen {a.occurrences} times)</span>}
                {a.resolution && <p class="muted small">Resolved: {a.resolution}</p>}
              </td>
              <td>
                <StatusBadge status={a.severity} />
              </td>
              <td>
                <StatusBadge status={a.state} />
              </td>
              <td>
                {a.server_id ? (
                  <a class="name" href={href(`/servers/${a.server_id}`)}>
                    {name(a.server_id)}
                  </a>
                ) : a.marketplace ? (
                  marketplaceName(a.marketplace)
                ) : (
                  'account'
                )}
              </td>
              <td class="nowrap">{ago(a.opened_at)}</td>
              {can('operator') && (
                <td>
                  {a.state === 'open' && (
                    <Action
                      label="Acknowledge"
                      run={async () => {
                        await request('POST', `/alerts/${a.id}/acknowledge`)
                        list.reload()
                      }}
                    />
                  )}
                  {a.state !== 'resolved' && <Resolve incident={a} done={list.reload} />}
                </td>
              )}
            </tr>
          )}
        />
      </Section>
    </Page>
  )
}
