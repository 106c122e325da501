import { get, request } from '../lib/api'
import type { ServerRow, WatchdogRule, WatchdogRulePatchBody } from '../lib/api-types'
import { dateTime } from '../lib/format'
import { href } from '../lib/router'
import { useResource } from '../lib/resource'
import { can } from '../lib/session'
import { StatusBadge } from '../ui/badges'
import { Section } from '../ui/layout'
import { Action, Async, Empty, TableWrap } from '../ui/states'

/**
 * The watchdog's rules on the settings page (docs/watchdog.md): turn each on or off and see where
 * its ladders stand. Rules are created and tuned through the API (POST/PATCH /watchdog/rules).
 */

const WORDS: Record<string, string> = { notify: 'notify', restart_runtime: 'restart runtime', reboot: 'reboot', page: 'page' }

function condition(r: WatchdogRule): string {
  const c = r.condition
  if (c.kind === 'xid') return `Xid ${(c.xids ?? []).join(', ')}`
  if (c.kind === 'gpu_missing') return c.expected_gpus ? `fewer than ${c.expected_gpus} GPUs` : 'a GPU missing'
  return c.band === 'zero' ? `GPU at 0 % for ${c.minutes} min during a rental` : `GPU at ≥ ${c.at_least_pct} % for ${c.minutes} min`
}

function Ladders({ rule, names }: { rule: WatchdogRule; names: Map<string, string> }) {
  if (!rule.enabled) return <span class="muted">off</span>
  if (rule.states.length === 0) return <span class="muted">all servers fine</span>
  return (
    <ul>
      {rule.states.map((s) => (
        <li key={s.server_id}>
          <a href={href(`/servers/${s.server_id}`)}>{names.get(s.server_id) ?? 'server'}</a> <StatusBadge status={s.status} />{' '}
          {s.hold_reason === 'rental_running' ? 'waiting for the rental to end' : s.next_action ? `next: ${WORDS[s.next_action]}` : 'paged'}
          {s.last_step_at && <span class="muted small"> (last step {dateTime(s.last_step_at)})</span>}
        </li>
      ))}
    </ul>
  )
}

export function WatchdogRules() {
  const rules = useResource(() => get<{ items: WatchdogRule[] }>('/watchdog/rules'), [])
  const servers = useResource(() => get<{ items: ServerRow[] }>('/servers', { limit: 200 }), [])
  const names = new Map((servers.data?.items ?? []).map((s) => [s.id, s.name]))
  return (
    <Section title="Watchdog">
      <p class="muted small">
        While a rule's condition holds, the watchdog climbs its ladder: notify, restart the container runtime, reboot, then give up and page. On a rented server
        it only notifies unless the rule allows more.
      </p>
      <Async r={rules}>
        {({ items }) =>
          items.length === 0 ? (
            <Empty>No watchdog rules.</Empty>
          ) : (
            <TableWrap label="Watchdog rules">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Rule</th>
                    <th scope="col">When</th>
                    <th scope="col">Ladder</th>
                    <th scope="col">Now</th>
                    {can('operator') && <th scope="col">Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {items.map((r) => (
                    <tr key={r.id}>
                      <td>{r.name}</td>
                      <td>{condition(r)}</td>
                      <td>{[...r.steps.map((s) => WORDS[s.action]), 'page'].join(' → ')}</td>
                      <td>
                        <Ladders rule={r} names={names} />
                      </td>
                      {can('operator') && (
                        <td>
                          <Action
                            label={r.enabled ? `Turn off ${r.name}` : `Turn on ${r.name}`}
                            confirm={r.enabled ? undefined : `Turn on "${r.name}"? It may restart and reboot idle servers.`}
                            run={async () => {
                              await request('PATCH', `/watchdog/rules/${r.id}`, {
                                body: { enabled: !r.enabled } satisfies WatchdogRulePatchBody,
                                ifMatch: `"${r.version}"`,
                              })
                              rules.reload()
                            }}
                          />
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )
        }
      </Async>
    </Section>
  )
}
