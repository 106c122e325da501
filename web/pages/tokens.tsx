import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { dateTime } from '../lib/format'
import { useIdempotency, usePaged, useResource } from '../lib/resource'
import { can, type Role } from '../lib/session'
import type { Pat, PatCreateBody, PatCreated, ServerRow } from '../lib/api-types'
import { CheckField, Form, TextField, useForm } from '../ui/form'
import { Page, Section } from '../ui/layout'
import { Action, PagedTable } from '../ui/states'
import { CopyButton } from './add-server'

/**
 * Personal access tokens (docs/access.md): minted with scopes, an expiry and an optional server
 * allowlist; the token itself is shown once, here, and never again. Revoking takes effect at once.
 */

const AREAS: [string, Role, Role][] = [
  ['servers', 'viewer', 'operator'],
  ['commands', 'viewer', 'operator'],
  ['billing', 'viewer', 'admin'],
  ['marketplaces', 'viewer', 'admin'],
  ['notifications', 'viewer', 'admin'],
  ['strategy', 'viewer', 'admin'],
  ['audit', 'admin', 'admin'],
]

const inDays = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10)

function NewToken({ servers, created }: { servers: ServerRow[]; created: () => void }) {
  const form = useForm()
  const idem = useIdempotency()
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState<string[]>(['servers:read'])
  const [expires, setExpires] = useState(inDays(90))
  const [allow, setAllow] = useState<string[]>([])
  const [token, setToken] = useState<string | null>(null)
  const toggle = (list: string[], v: string, on: boolean) => (on ? [...list, v] : list.filter((x) => x !== v))
  return (
    <>
      <Form
        form={form}
        class="form wide"
        label="New token"
        submit="Create the token"
        busyLabel="Creating…"
        onSubmit={async () => {
          const body: PatCreateBody = {
            name: name.trim(),
            scopes,
            expires_at: expires ? new Date(`${expires}T23:59:59Z`).toISOString() : null,
            ...(allow.length ? { server_allowlist: allow } : {}),
          }
          const { data } = await request<PatCreated>('POST', '/tokens', { body, idempotencyKey: idem.keyFor(body) })
          idem.done()
          setToken(data.token)
          setName('')
          created()
        }}
      >
        <TextField form={form} name="/name" label="Name" hint="What uses it, for example ci or grafana." value={name} onInput={setName} />
        <fieldset>
          <legend>Scopes</legend>
          <div class="scope-grid">
            {AREAS.map(([area, read, write]) =>
              (['read', 'write'] as const).map((mode) => {
                const scope = `${area}:${mode}`
                if (!can(mode === 'read' ? read : write)) return null
                return (
                  <CheckField
                    key={scope}
                    form={form}
                    name={`/scopes/${scopes.indexOf(scope)}`}
                    label={scope}
                    checked={scopes.includes(scope)}
                    onChange={(v) => setScopes(toggle(scopes, scope, v))}
                  />
                )
              }),
            )}
          </div>
        </fieldset>
        <TextField form={form} name="/expires_at" label="Expires on" type="date" hint="At most a year from today." value={expires} onInput={setExpires} />
        {servers.length > 0 && (
          <fieldset>
            <legend>Only these servers (optional)</legend>
            {servers.map((s) => (
              <CheckField
                key={s.id}
                form={form}
                name={`/server_allowlist/${allow.indexOf(s.id)}`}
                label={s.name}
                checked={allow.includes(s.id)}
                onChange={(v) => setAllow(toggle(allow, s.id, v))}
              />
            ))}
          </fieldset>
        )}
      </Form>
      {token && (
        <div class="secret" role="status">
          <p>
            <strong>Your new token.</strong> Copy it now: it is shown only this once. Use it as <code>Authorization: Bearer …</code>.
          </p>
          <code data-testid="new-token">{token}</code>
          <CopyButton text={token} label="Copy the token" />
        </div>
      )}
    </>
  )
}

export function TokensPage() {
  const list = usePaged<Pat>('/tokens', { limit: 50 }, [])
  const servers = useResource(() => get<{ items: ServerRow[] }>('/servers', { limit: 200 }), [])
  return (
    <Page title="Tokens">
      <Section title="Create a token">
        <NewToken servers={servers.data?.items ?? []} created={list.reload} />
      </Section>
      <Section title="Your tokens">
        <PagedTable
          r={list}
          loading="Loading the tokens…"
          empty="No tokens. Scripts and tools (Grafana, CI) use one instead of your password."
          label="Tokens"
          head={
            <>
              <th scope="col">Name</th>
              <th scope="col">Starts with</th>
              <th scope="col">Scopes</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">Revoke</th>
            </>
          }
          row={(t) => (
            <tr key={t.id} data-token={t.name}>
              <td>
                {t.name}
                {t.server_allowlist && <span class="muted small"> ({t.server_allowlist.length} servers only)</span>}
              </td>
              <td>
                <code>{t.prefix}…</code>
              </td>
              <td>{t.scopes.join(', ')}</td>
              <td class="nowrap">{dateTime(t.expires_at, 'never')}</td>
              <td class="nowrap">{dateTime(t.last_used_at, 'never')}</td>
              <td>
                <Action
                  label={`Revoke ${t.name}`}
                  class="danger"
                  confirm={`Revoke the token ${t.name}? Whatever uses it stops working at once.`}
                  run={async () => {
                    await request('DELETE', `/tokens/${t.id}`)
                    list.reload()
                  }}
                />
              </td>
            </tr>
          )}
        />
      </Section>
    </Page>
  )
}
