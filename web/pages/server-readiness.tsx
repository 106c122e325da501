import { get } from '../lib/api'
import { ago, marketplaceName } from '../lib/format'
import { useResource } from '../lib/resource'
import type { ServerReadiness as Readiness } from '../lib/api-types'
import { Section } from '../ui/layout'
import { Async, DataTable } from '../ui/states'

/**
 * The server page's "Readiness" section (docs/readiness.md): per marketplace its verdict against
 * the marketplaces' bar, and every check with its status, measured value, threshold, where both
 * come from and what to do. Unknown is said as unknown, never as a pass.
 */

type Entry = Readiness['marketplaces'][number]

const TONE = { pass: 'ok', fail: 'bad', unknown: '' } as const
const VERDICT = { ready: ['ok', 'ready'], not_ready: ['bad', 'not ready'], unknown: ['', 'unknown'] } as const
const SOURCE = { marketplace: 'the marketplace', agent: 'the agent' } as const

function Checks({ e }: { e: Entry }) {
  const [tone, word] = VERDICT[e.status]
  return (
    <div data-marketplace={e.marketplace} data-readiness={e.status}>
      <h3>
        {marketplaceName(e.marketplace)} <span class={`badge ${tone}`}>{word}</span>
      </h3>
      <p class="muted">
        {e.linked
          ? `Machine ${e.external_machine_id}${e.link_state === 'stale' ? ' (stale link: the platform no longer lists it)' : ''}; the platform's view as of ${ago(e.platform_seen_at)}.`
          : 'Not linked here: checked against the agent’s facts only.'}
      </p>
      <DataTable
        label={`Readiness on ${marketplaceName(e.marketplace)}`}
        head={
          <>
            <th scope="col">Check</th>
            <th scope="col">Status</th>
            <th scope="col">Measured</th>
            <th scope="col">Needs</th>
            <th scope="col">What to do</th>
          </>
        }
      >
        {e.items.map((i) => (
          <tr key={i.id} data-item={i.id} data-status={i.status}>
            <th scope="row">
              {i.title}
              {!i.required && <span class="muted small"> (advisory)</span>}
            </th>
            <td>
              <span class={`badge ${TONE[i.status]}`}>{i.status}</span>
            </td>
            <td>
              {i.value === null ? '—' : `${i.value}${i.unit ? ` ${i.unit}` : ''}`}
              {i.value_source && <div class="muted small">from {SOURCE[i.value_source]}</div>}
            </td>
            <td>
              {i.threshold}
              <div class="muted small">{i.threshold_source}</div>
            </td>
            <td>
              {i.action ?? '—'}
              {i.status !== 'pass' && <div class="muted small">{i.detail}</div>}
            </td>
          </tr>
        ))}
      </DataTable>
    </div>
  )
}

export function ServerReadiness({ serverId, version }: { serverId: string; version: unknown }) {
  const r = useResource(() => get<Readiness>(`/servers/${serverId}/readiness`), [serverId, version])
  return (
    <Section title="Readiness">
      <div id="readiness">
        <Async r={r} label="Checking readiness…">
          {(d) => (
            <>
              <p>
                Against each marketplace’s own bar (Vast’s self-test pre-flight and what loses verification): <strong>{VERDICT[d.status][1]}</strong>.
              </p>
              {d.marketplaces.map((e) => (
                <Checks key={e.marketplace} e={e} />
              ))}
            </>
          )}
        </Async>
      </div>
    </Section>
  )
}
