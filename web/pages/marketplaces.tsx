import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { ago, type Marketplace, MARKETPLACES, marketplaceName } from '../lib/format'
import { type Resource, useIdempotency, useResource } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { Candidate, ConnectBody, Connection, Link, LinkCreateBody, ServerRow } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Form, SelectField, TextField, useForm } from '../ui/form'
import { Money, Price } from '../ui/money'
import { Page, Section } from '../ui/layout'
import { Action, Async, DataTable, Empty, TableWrap } from '../ui/states'
import { LinkActions } from './link-actions'
import { Market } from './market'

/**
 * Marketplaces (docs/marketplaces.md): connect an account with its API key (checked with the
 * marketplace, stored sealed, never shown again), find the marketplace machine of a server by its
 * evidence and link it, then publish or withdraw its offer and announce maintenance windows.
 */

type Account = Connection

function Connect({ m, account, done }: { m: Marketplace; account?: Account; done: () => void }) {
  const form = useForm()
  const [key, setKey] = useState('')
  const idem = useIdempotency()
  return (
    <Form
      form={form}
      class="form"
      label={`${account ? 'Replace the key of' : 'Connect'} ${MARKETPLACES[m]}`}
      submit={account ? 'Replace the key' : 'Connect'}
      busyLabel="Checking the key with the marketplace…"
      onSubmit={async () => {
        const body: ConnectBody = { api_key: key.trim() }
        await request('PUT', `/marketplaces/${m}`, { body, idempotencyKey: idem.keyFor(body) })
        idem.done()
        setKey('')
        done()
      }}
    >
      <TextField
        form={form}
        name="/api_key"
        label="API key"
        type="password"
        autocomplete="off"
        spellcheck={false}
        hint="Checked with the marketplace before it is kept; stored sealed and never shown again."
        value={key}
        onInput={setKey}
      />
    </Form>
  )
}

function Accounts({ accounts }: { accounts: Resource<{ items: Account[] }> }) {
  return (
    <Section title="Accounts">
      <Async r={accounts} label="Loading the accounts…">
        {({ items }) => (
          <div class="grid">
            {(Object.keys(MARKETPLACES) as Marketplace[]).map((m) => {
              const a = items.find((x) => x.marketplace === m)
              return (
                <article class="panel" key={m} aria-labelledby={`acct-${m}`} data-marketplace={m}>
                  <h3 id={`acct-${m}`}>{MARKETPLACES[m]}</h3>
                  {a ? (
                    <dl class="facts">
                      <dt>Status</dt>
                      <dd>
                        <StatusBadge status={a.status} />
                      </dd>
                      <dt>Account</dt>
                      <dd>{a.owner}</dd>
                      <dt>Last sync</dt>
                      <dd>{ago(a.last_success_at)}</dd>
                      {a.last_failure && (
                        <>
                          <dt>Last failure</dt>
                          <dd>
                            {a.last_failure} ({ago(a.last_failure_at)})
                          </dd>
                        </>
                      )}
                      {a.holding_usd !== null && (
                        <>
                          <dt>Held by the marketplace</dt>
                          <dd>
                            <Money usd={a.holding_usd} />
                          </dd>
                        </>
                      )}
                    </dl>
                  ) : (
                    <p class="muted">Not connected.</p>
                  )}
                  {can('admin') && <Connect m={m} account={a} done={accounts.reload} />}
                  {can('admin') && a && (
                    <Action
                      label="Disconnect"
                      class="danger"
                      confirm={`Disconnect ${MARKETPLACES[m]}? Its key is forgotten and its links go with it.`}
                      run={async () => {
                        await request('DELETE', `/marketplaces/${m}`)
                        accounts.reload()
                      }}
                    />
                  )}
                </article>
              )
            })}
          </div>
        )}
      </Async>
    </Section>
  )
}

const EVIDENCE: [keyof Candidate['evidence'], string][] = [
  ['hostname', 'Hostname'],
  ['public_ip', 'Address'],
  ['gpu', 'GPUs'],
  ['disk', 'Disk'],
  ['ports', 'Ports'],
]

function LinkMachine({ servers, connected, done }: { servers: ServerRow[]; connected: Marketplace[]; done: () => void }) {
  const form = useForm()
  const manualForm = useForm()
  const [server, setServer] = useState('')
  const [market, setMarket] = useState<Marketplace | ''>(connected[0] ?? '')
  const [found, setFound] = useState<{ candidates: Candidate[] } | null>(null)
  const [manual, setManual] = useState('')
  const idem = useIdempotency()
  const link = async (machine: string) => {
    const body: LinkCreateBody = { server_id: server, marketplace: market || connected[0], external_machine_id: machine }
    await request('POST', '/marketplaces/links', { body, idempotencyKey: idem.keyFor(body) })
    idem.done()
    setFound(null)
    setManual('')
    done()
  }
  if (connected.length === 0) return <Empty>Connect a marketplace account first.</Empty>
  const name = (id: string | null) => servers.find((s) => s.id === id)?.name ?? id
  return (
    <>
      <Form
        form={form}
        class="form inline"
        label="Find the machine of a server"
        submit="Find its machine"
        busyLabel="Asking the marketplace…"
        onSubmit={async () => {
          setFound(await get<{ candidates: Candidate[] }>('/marketplaces/links/candidates', { server_id: server, marketplace: market || connected[0] }))
        }}
      >
        <SelectField
          form={form}
          name="/server_id"
          label="Server"
          value={server}
          onChange={(v) => {
            setServer(v)
            setFound(null)
          }}
          options={[['', 'Choose a server'], ...servers.map((s): [string, string] => [s.id, s.name])]}
        />
        <SelectField
          form={form}
          name="/marketplace"
          label="Marketplace"
          value={market}
          onChange={(v) => setMarket(v as Marketplace)}
          options={connected.map((m) => [m, MARKETPLACES[m]])}
        />
      </Form>
      {found &&
        (found.candidates.length === 0 ? (
          <Empty>The account lists no machines.</Empty>
        ) : (
          <TableWrap label="Candidate machines">
            <table>
              <caption class="muted small">Strongest first: each fact of the server's agent that agrees with the machine counts.</caption>
              <thead>
                <tr>
                  <th scope="col">Machine</th>
                  <th scope="col">Hostname</th>
                  <th scope="col">GPUs</th>
                  {EVIDENCE.map(([k, label]) => (
                    <th scope="col" key={k}>
                      {label}
                    </th>
                  ))}
                  <th scope="col">Link</th>
                </tr>
              </thead>
              <tbody>
                {found.candidates.map((c) => (
                  <tr key={c.external_machine_id} data-machine={c.external_machine_id}>
                    <td>
                      {c.external_machine_id} {c.suggested && <span class="badge ok">suggested</span>}
                    </td>
                    <td>{c.hostname ?? '—'}</td>
                    <td>{c.gpu ? `${c.gpu_count ?? '?'} × ${c.gpu}` : '—'}</td>
                    {EVIDENCE.map(([k]) => (
                      <td key={k}>{c.evidence[k] ? '✓ matches' : <span class="muted">no</span>}</td>
                    ))}
                    <td>
                      {c.linked_server_id ? (
                        <span class="muted">linked to {name(c.linked_server_id)}</span>
                      ) : (
                        <Action label={`Link machine ${c.external_machine_id}`} run={() => link(c.external_machine_id)} />
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        ))}
      {server && (
        <Form form={manualForm} class="form inline" label="Link by machine id" submit="Link by id" onSubmit={() => link(manual.trim())}>
          <TextField form={manualForm} name="/external_machine_id" label="Or the machine's id" value={manual} onInput={setManual} />
        </Form>
      )}
    </>
  )
}

function Links({ links, servers, reload }: { links: Link[]; servers: ServerRow[]; reload: () => void }) {
  if (links.length === 0) return <Empty>No links yet. Find a server's machine above and link it.</Empty>
  const name = (id: string) => servers.find((s) => s.id === id)?.name ?? id.slice(0, 8)
  return (
    <DataTable
      label="Links"
      head={
        <>
          <th scope="col">Server</th>
          <th scope="col">Marketplace</th>
          <th scope="col">Machine</th>
          <th scope="col">Link</th>
          <th scope="col">Listed</th>
          <th scope="col" class="num">
            Price / GPU-h
          </th>
          <th scope="col" class="num">
            Rentals
          </th>
          <th scope="col">Maintenance</th>
          {can('admin') && <th scope="col">Actions</th>}
        </>
      }
    >
      {links.map((l) => (
        <tr key={`${l.server_id}-${l.marketplace}`} data-link={`${l.marketplace}:${l.external_machine_id}`}>
          <td>
            <a href={href(`/servers/${l.server_id}`)}>{name(l.server_id)}</a>
          </td>
          <td>{marketplaceName(l.marketplace)}</td>
          <td>{l.external_machine_id}</td>
          <td>
            <StatusBadge status={l.state} />
            {l.remote.error && <p class="inline-error">{l.remote.error}</p>}
          </td>
          <td>{l.remote.listed === null ? '—' : l.remote.listed ? 'yes' : 'no'}</td>
          <td class="num">
            <Price usd={l.remote.price_gpu_hour} />
          </td>
          <td class="num">{l.remote.rentals_running ?? '—'}</td>
          <td>
            {l.remote.maintenance_announced ? `from ${new Date(l.remote.maintenance_starts_at ?? '').toLocaleString()}, ${l.remote.maintenance_hours} h` : '—'}
          </td>
          {can('admin') && (
            <td>
              <LinkActions link={l} serverName={name(l.server_id)} changed={reload} />
            </td>
          )}
        </tr>
      ))}
    </DataTable>
  )
}

export function MarketplacesPage() {
  const accounts = useResource(() => get<{ items: Account[] }>('/marketplaces/accounts'), [])
  const links = useResource(() => get<{ links: Link[] }>('/marketplaces/links'), [])
  const servers = useResource(() => get<{ items: ServerRow[] }>('/servers', { limit: 200 }), [])
  const connected = (accounts.data?.items ?? []).filter((a) => a.status === 'connected').map((a) => a.marketplace)
  // Market figures and the calls log are read again after every change made here.
  const [version, setVersion] = useState(0)
  const changed = () => {
    links.reload()
    setVersion((v) => v + 1)
  }
  return (
    <Page title="Marketplaces">
      <Accounts accounts={accounts} />
      {can('admin') && (
        <Section title="Link a machine">
          <LinkMachine servers={servers.data?.items ?? []} connected={connected} done={changed} />
        </Section>
      )}
      <Section title="Links and offers" actions={<a href={href('/marketplaces/bulk')}>Bulk changes</a>}>
        <Async r={links} label="Loading the links…">
          {(d) => <Links links={d.links} servers={servers.data?.items ?? []} reload={changed} />}
        </Async>
      </Section>
      <Market servers={servers.data?.items ?? []} version={version} />
    </Page>
  )
}
