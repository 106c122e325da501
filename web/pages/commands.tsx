import { useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { ago } from '../lib/format'
import { useLive } from '../lib/live'
import { useIdempotency, usePaged, useResource } from '../lib/resource'
import { href, navigate } from '../lib/router'
import { can } from '../lib/session'
import type { CatalogueItem, Command, CommandCreateBody, JsonSchema, ServerRow } from '../lib/api-types'
import { DottedName, StatusBadge } from '../ui/badges'
import { Field, Form, SelectField, useForm } from '../ui/form'
import { Page, Section } from '../ui/layout'
import { Async, DataTable, Paged } from '../ui/states'

/**
 * Typed commands (docs/commands.md): a form built from the catalogue's params schema, and the list
 * with both status axes (delivery, execution), refreshed live.
 */

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired'])
export const isTerminal = (c: Command) => TERMINAL.has(c.execution_status) || c.delivery_status === 'delivery_failed'

/** The params schema's properties as form fields: whole numbers (null allowed where the schema allows it) and text. */
function paramFields(schema: JsonSchema): { name: string; required: boolean; kind: 'integer' | 'string'; nullable: boolean; hint: string }[] {
  return Object.entries(schema.properties ?? {}).map(([name, p]) => {
    const options = p.anyOf ?? [p]
    const main = options.find((o) => o.type !== 'null') ?? p
    const range = main.minimum !== undefined ? `${main.minimum} to ${main.maximum}` : ''
    const nullable = options.some((o) => o.type === 'null')
    return {
      name,
      required: (schema.required ?? []).includes(name),
      kind: main.type === 'integer' || main.type === 'number' ? 'integer' : 'string',
      nullable,
      hint: [range, nullable ? 'empty for all' : '', main.pattern ? `for example 1.2.0` : ''].filter(Boolean).join('; '),
    }
  })
}

type Requires = NonNullable<CommandCreateBody['requires']>

export function SendCommand({ serverId, onSent }: { serverId?: string; onSent?: (c: Command) => void }) {
  const catalogue = useResource(() => get<{ items: CatalogueItem[] }>('/commands/catalogue'), [])
  const servers = useResource(
    () => (serverId ? Promise.resolve({ items: [] as ServerRow[] }) : get<{ items: ServerRow[] }>('/servers', { limit: 200 })),
    [serverId],
  )
  const form = useForm()
  const [server, setServer] = useState(serverId ?? '')
  const [type, setType] = useState('diagnostics.run')
  const [params, setParams] = useState<Record<string, string>>({})
  const [requires, setRequires] = useState<Requires | ''>('')
  const idem = useIdempotency()
  const item = catalogue.data?.items.find((c) => c.type === type)
  const fields = item ? paramFields(item.params) : []
  return (
    <Async r={catalogue} label="Loading the command catalogue…">
      {(cat) => (
        <Form
          form={form}
          label="Send a command"
          submit="Send the command"
          busyLabel="Sending…"
          onSubmit={async () => {
            const body: Record<string, unknown> = {}
            for (const f of fields) {
              const raw = (params[f.name] ?? '').trim()
              if (raw === '') {
                if (f.nullable) body[f.name] = null
                continue
              }
              body[f.name] = f.kind === 'integer' && /^-?\d+$/.test(raw) ? Number(raw) : raw
            }
            const command: CommandCreateBody = { server_id: server || serverId || '', type, params: body, ...(requires ? { requires } : {}) }
            const { data } = await request<Command>('POST', '/commands', { body: command, idempotencyKey: idem.keyFor(command) })
            idem.done()
            onSent?.(data)
          }}
        >
          {!serverId && (
            <SelectField
              form={form}
              name="/server_id"
              label="Server"
              value={server}
              onChange={setServer}
              options={[['', 'Choose a server'], ...(servers.data?.items ?? []).map((s): [string, string] => [s.id, `${s.name} (${s.presence})`])]}
            />
          )}
          <SelectField
            form={form}
            name="/type"
            label="Command"
            hint={
              item
                ? `${item.description}${item.dangerous ? '. Dangerous: during a rental it waits for the rental to end unless you say otherwise.' : ''}`
                : undefined
            }
            value={type}
            onChange={(v) => {
              setType(v)
              setParams({})
            }}
            options={cat.items.map((c) => [c.type, c.type])}
          />
          {fields.map((f) => (
            <Field
              key={f.name}
              form={form}
              name={`/params/${f.name}`}
              label={`${f.name.replaceAll('_', ' ')}${f.required ? '' : ' (optional)'}`}
              hint={f.hint || undefined}
            >
              {(p) => (
                <input
                  {...p}
                  type="text"
                  inputMode={f.kind === 'integer' ? 'numeric' : 'text'}
                  required={f.required && !f.nullable}
                  value={params[f.name] ?? ''}
                  onInput={(e) => setParams({ ...params, [f.name]: e.currentTarget.value })}
                />
              )}
            </Field>
          ))}
          <SelectField
            form={form}
            name="/requires"
            label="Run when"
            value={requires}
            onChange={(v) => setRequires(v as Requires | '')}
            options={[
              ['', 'The service decides (after the rental for dangerous commands)'],
              ['none', 'At once'] satisfies [Requires, string],
              ['idle', 'When the server is idle'] satisfies [Requires, string],
              ['after_rental', 'After the current rental'] satisfies [Requires, string],
            ]}
          />
        </Form>
      )}
    </Async>
  )
}

function CommandTable({ items, servers }: { items: Command[]; servers?: Map<string, string> }) {
  return (
    <DataTable
      label="Commands"
      head={
        <>
          <th scope="col">Command</th>
          {servers && <th scope="col">Server</th>}
          <th scope="col">Delivery</th>
          <th scope="col">Execution</th>
          <th scope="col">Sent</th>
        </>
      }
    >
      {items.map((c) => (
        <tr key={c.command_id} data-command={c.command_id}>
          <td>
            <a href={href(`/commands/${c.command_id}`)}>
              <DottedName name={c.type} />
            </a>
          </td>
          {servers && <td>{servers.get(c.server_id) ?? c.server_id.slice(0, 8)}</td>}
          <td>
            <StatusBadge status={c.delivery_status} />
            {c.queue_reason && <span class="muted small"> ({c.queue_reason.replaceAll('_', ' ')})</span>}
          </td>
          <td>
            <StatusBadge status={c.execution_status} />
            {c.progress !== null && c.execution_status === 'running' && <span class="muted small"> {c.progress} %</span>}
          </td>
          <td class="nowrap">{ago(c.created_at)}</td>
        </tr>
      ))}
    </DataTable>
  )
}

/** Commands of one server, or of the fleet, newest first. */
export function CommandList({ serverId }: { serverId?: string }) {
  const [status, setStatus] = useState('')
  const list = usePaged<Command>('/commands', { server_id: serverId, execution_status: status, limit: 50 }, [serverId, status])
  const servers = useResource(() => (serverId ? Promise.resolve(null) : get<{ items: ServerRow[] }>('/servers', { limit: 200 })), [serverId])
  useLive(() => {
    if (list.data?.items.some((c) => !isTerminal(c)) || !serverId) list.reload()
  })
  const names = servers.data ? new Map(servers.data.items.map((s) => [s.id, s.name])) : undefined
  return (
    <>
      <div class="field filter">
        <label for={`cmd-status-${serverId ?? 'all'}`}>Execution</label>
        <select id={`cmd-status-${serverId ?? 'all'}`} value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          <option value="">Any</option>
          {['not_started', 'running', 'succeeded', 'failed', 'cancelled', 'expired'].map((s) => (
            <option key={s} value={s}>
              {s.replaceAll('_', ' ')}
            </option>
          ))}
        </select>
      </div>
      <Paged r={list} loading="Loading the commands…" empty={`No commands${status ? ' with this status' : ' yet'}.`}>
        {(items) => <CommandTable items={items} servers={names} />}
      </Paged>
    </>
  )
}

export function Commands() {
  return (
    <Page title="Commands">
      {can('operator') && (
        <Section title="Send a command">
          <SendCommand onSent={(c) => navigate(`/commands/${c.command_id}`)} />
        </Section>
      )}
      <Section title="Recent commands">
        <CommandList />
      </Section>
    </Page>
  )
}
