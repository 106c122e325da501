import { useState } from 'preact/hooks'
import { ApiError, get, request } from '../lib/api'
import { dateTime } from '../lib/format'
import { useIdempotency, useResource } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { McpAccess, McpAccessBody } from '../lib/api-types'
import { CheckField, Form, useForm } from '../ui/form'
import { Page, Section } from '../ui/layout'
import { Action, Async, DataTable, Empty, ErrorNote } from '../ui/states'
import { CopyButton } from './add-server'

/**
 * AI-assistant access (docs/ai-access.md): one token per tenant for MCP clients, the tools it may
 * call, and the clients connected through OAuth. The token is shown once, when issued.
 */

type Access = McpAccess

function Tools({ access, saved }: { access: Access; saved: (a: Access) => void }) {
  const form = useForm()
  const idem = useIdempotency()
  const [allowed, setAllowed] = useState(access.tools.filter((t) => t.allowed).map((t) => t.name))
  return (
    <Form
      form={form}
      class="form wide"
      label="Allowed tools"
      submit={access.enabled ? 'Save the allowed tools' : 'Switch on with these tools'}
      onSubmit={async () => {
        const body: McpAccessBody = { enabled: true, allowed_tools: allowed }
        saved((await request<Access>('PUT', '/mcp/access', { body, idempotencyKey: idem.keyFor(body) })).data)
        idem.done()
      }}
    >
      {access.groups.map((g) => (
        <fieldset key={g.key}>
          <legend>
            {g.key}: {g.description}
          </legend>
          <div class="scope-grid">
            {access.tools
              .filter((t) => t.group === g.key)
              .map((t) => (
                <CheckField
                  key={t.name}
                  form={form}
                  name={`/allowed_tools/${allowed.indexOf(t.name)}`}
                  label={`${t.name}${t.mode === 'write' ? ' (changes things)' : ''}${t.available ? '' : ' (not on your plan or role)'}`}
                  checked={allowed.includes(t.name)}
                  onChange={(v) => setAllowed(v ? [...allowed, t.name] : allowed.filter((x) => x !== t.name))}
                />
              ))}
          </div>
        </fieldset>
      ))}
    </Form>
  )
}

export function AiPage() {
  const access = useResource(() => get<Access>('/mcp/access'), [])
  const [token, setToken] = useState<string | null>(null)
  const idem = useIdempotency()
  const saved = (a: Access) => {
    if (a.token) setToken(a.token)
    access.set({ ...a, token: undefined })
  }
  const entitled = !(access.error instanceof ApiError && access.error.problem.code === 'feature_not_entitled')
  if (!can('admin'))
    return (
      <Page title="AI access">
        <p>Only owners and admins manage AI-assistant access.</p>
      </Page>
    )
  return (
    <Page title="AI access">
      {!entitled ? (
        <Section title="Not on your plan">
          <p>
            AI-assistant access comes with the Pro and Enterprise plans. <a href={href('/billing/plan')}>See the plans</a>.
          </p>
        </Section>
      ) : access.error && !access.data ? (
        <ErrorNote error={access.error} retry={access.reload} />
      ) : (
        <Async r={access} label="Loading AI access…">
          {(a) => (
            <>
              <Section title="Access">
                <p>
                  {a.enabled ? (
                    <>
                      <span class="badge ok">on</span> Token <code>{a.prefix}…</code> issued {dateTime(a.issued_at)}, last used{' '}
                      {dateTime(a.last_used_at, 'never')}.
                    </>
                  ) : (
                    <>
                      <span class="badge">off</span> No AI assistant can reach this account.
                    </>
                  )}{' '}
                  MCP endpoint: <code>{a.endpoint}</code>
                </p>
                {token && (
                  <div class="secret" role="status">
                    <p>
                      <strong>The AI-assistant token.</strong> Copy it now: it is shown only this once.
                    </p>
                    <code data-testid="mcp-token">{token}</code>
                    <CopyButton text={token} label="Copy the token" />
                  </div>
                )}
                <div class="actions">
                  {a.enabled && (
                    <Action
                      label="Issue a new token"
                      confirm="Issue a new token? The current one stops working; permissions and connected clients stay."
                      run={async () => {
                        const body: McpAccessBody = { enabled: true, reissue: true }
                        saved((await request<Access>('PUT', '/mcp/access', { body, idempotencyKey: idem.keyFor({ ...body, at: a.issued_at }) })).data)
                      }}
                    />
                  )}
                  {a.enabled && (
                    <Action
                      label="Switch off"
                      class="danger"
                      confirm="Switch AI access off? The token and every client's access end at once."
                      run={async () => {
                        const body: McpAccessBody = { enabled: false }
                        saved((await request<Access>('PUT', '/mcp/access', { body, idempotencyKey: idem.keyFor({ ...body, at: a.issued_at }) })).data)
                        setToken(null)
                      }}
                    />
                  )}
                </div>
              </Section>
              <Section title="Tools">
                <Tools key={String(a.enabled)} access={a} saved={saved} />
              </Section>
              <Section title="Connected clients">
                {a.clients.length === 0 ? (
                  <Empty>No client has connected through OAuth.</Empty>
                ) : (
                  <DataTable
                    label="Connected clients"
                    head={
                      <>
                        <th scope="col">Client</th>
                        <th scope="col">Connected</th>
                        <th scope="col">Last used</th>
                        <th scope="col">Disconnect</th>
                      </>
                    }
                  >
                    {a.clients.map((cl) => (
                      <tr key={cl.id}>
                        <td>{cl.name}</td>
                        <td class="nowrap">{dateTime(cl.connected_at)}</td>
                        <td class="nowrap">{dateTime(cl.last_used_at, 'never')}</td>
                        <td>
                          <Action
                            label={`Disconnect ${cl.name}`}
                            class="danger"
                            run={async () => {
                              await request('DELETE', `/mcp/clients/${cl.id}`)
                              access.reload()
                            }}
                          />
                        </td>
                      </tr>
                    ))}
                  </DataTable>
                )}
              </Section>
            </>
          )}
        </Async>
      )}
    </Page>
  )
}
