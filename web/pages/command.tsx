import { get, request } from '../lib/api'
import { dateTime } from '../lib/format'
import { useLive } from '../lib/live'
import { useResource, useSnapshot } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { Command, CommandLog as Log, ServerDetail, TimelineStep } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Page, Section } from '../ui/layout'
import { Action, Async, DataTable, Empty } from '../ui/states'
import { isTerminal } from './commands'
import { DcgmGpuResults } from './command-dcgm'

/** A server by its name (GET /servers/{id}), its id on hover; the id only while the name loads or if it cannot be read. */
function ServerName({ id }: { id: string }) {
  const server = useResource(() => get<ServerDetail>(`/servers/${id}`), [id])
  return (
    <a href={href(`/servers/${id}`)} title={id} class="name">
      {server.data?.name ?? (server.error ? id : '…')}
    </a>
  )
}

/** One command: both status axes, its timeline, the result or error, the log of a failure, cancel. */

function Timeline({ id, version }: { id: string; version: number }) {
  const steps = useResource(() => get<{ items: TimelineStep[] }>(`/commands/${id}/timeline`, { limit: 200 }), [id, version])
  return (
    <Async r={steps} label="Loading the timeline…">
      {({ items }) =>
        items.length === 0 ? (
          <Empty>Nothing has happened yet.</Empty>
        ) : (
          <DataTable
            label="Timeline"
            head={
              <>
                <th scope="col">When</th>
                <th scope="col">Axis</th>
                <th scope="col">Change</th>
                <th scope="col">Note</th>
              </>
            }
          >
            {items.map((s) => (
              <tr key={s.id}>
                <td class="nowrap">{dateTime(s.at)}</td>
                <td>{s.axis}</td>
                <td>
                  {s.from ? `${s.from.replaceAll('_', ' ')} → ` : ''}
                  <StatusBadge status={s.to} />
                </td>
                <td>{s.note ?? ''}</td>
              </tr>
            ))}
          </DataTable>
        )
      }
    </Async>
  )
}

function CommandLog({ id, logId }: { id: string; logId: string }) {
  const log = useResource(() => get<Log>(`/commands/${id}/logs/${logId}`), [id, logId])
  return (
    <Async r={log} label="Loading the log…">
      {(l) => (
        <>
          <pre tabindex={0}>{l.text || '(empty)'}</pre>
          <p class="muted small">
            {l.bytes} bytes{l.truncated ? ', cut at 64 KiB' : ''}; redacted by the service.
          </p>
        </>
      )}
    </Async>
  )
}

export function CommandPage({ id }: { id: string }) {
  const cmd = useSnapshot<Command>(`/commands/${id}`, {}, [id])
  useLive(() => {
    if (cmd.data && !isTerminal(cmd.data)) void cmd.refresh()
  })
  return (
    <Page title={cmd.data ? `Command ${cmd.data.type}` : 'Command'}>
      <Async r={cmd} label="Loading the command…">
        {(c) => (
          <>
            <Section
              title="Status"
              actions={
                can('operator') &&
                !isTerminal(c) && (
                  <Action
                    label="Cancel the command"
                    class="danger"
                    confirm="Cancel this command? A running one is asked to stop."
                    run={async () => cmd.set((await request<Command>('POST', `/commands/${id}/cancel`, { ifMatch: `"${c.version}"` })).data)}
                  />
                )
              }
            >
              <dl class="facts" aria-live="polite">
                <dt>Delivery</dt>
                <dd>
                  <StatusBadge status={c.delivery_status} /> {c.queue_reason && <span class="muted">({c.queue_reason.replaceAll('_', ' ')})</span>}
                </dd>
                <dt>Execution</dt>
                <dd>
                  <StatusBadge status={c.execution_status} />
                  {c.progress !== null && !isTerminal(c) && ` ${c.progress} %`}
                </dd>
                <dt>Server</dt>
                <dd>
                  <ServerName id={c.server_id} />
                </dd>
                <dt>Runs when</dt>
                <dd>{c.requires.replaceAll('_', ' ')}</dd>
                <dt>Sent by</dt>
                <dd>{c.issued_by.type}</dd>
                <dt>Created</dt>
                <dd>{dateTime(c.created_at)}</dd>
                <dt>Finished</dt>
                <dd>{dateTime(c.finished_at ?? c.cancelled_at, 'not yet')}</dd>
              </dl>
              {Object.keys(c.params).length > 0 && (
                <>
                  <h3>Parameters</h3>
                  <pre>{JSON.stringify(c.params, null, 2)}</pre>
                </>
              )}
            </Section>
            {c.result !== null && c.result !== undefined && (
              <Section title="Result">
                {c.type === 'diagnostics.dcgm' && <DcgmGpuResults result={c.result} />}
                <pre tabindex={0}>{JSON.stringify(c.result, null, 2)}</pre>
              </Section>
            )}
            {c.error && (
              <Section title="Error">
                <p class="form-error" role="alert">
                  <strong>{c.error.code.replaceAll('_', ' ')}</strong>: {c.error.message} {c.error.retryable ? '(can be retried)' : ''}
                </p>
                {c.error.log_ref && <CommandLog id={id} logId={c.error.log_ref} />}
              </Section>
            )}
            <Section title="Timeline">
              <Timeline id={id} version={c.version} />
            </Section>
          </>
        )}
      </Async>
    </Page>
  )
}
