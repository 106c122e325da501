import { useRef, useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { dateTime } from '../lib/format'
import { useLive } from '../lib/live'
import { useIdempotency } from '../lib/resource'
import { href } from '../lib/router'
import type { InitCreateBody, InitToken, ServerRow } from '../lib/api-types'
import { PresenceBadge } from '../ui/badges'
import { Form, SelectField, TextField, useForm } from '../ui/form'
import { Page, Section } from '../ui/layout'

/**
 * Add a server (docs/access.md "Agent init tokens", docs/agent.md): a one-time init token, shown
 * once and held only in this page's memory (never in an address, never stored by the console), and
 * the installer, which reads the token from a root-only file so it never shows in the process list.
 * The page then watches the fleet for the new server and says when it is online.
 */

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle')
  return (
    <span class="action">
      <button
        type="button"
        onClick={() =>
          navigator.clipboard.writeText(text).then(
            () => setState('copied'),
            () => setState('failed'),
          )
        }
      >
        {label}
      </button>
      <span role="status" class="muted small">
        {state === 'copied' ? ' Copied.' : state === 'failed' ? ' Could not copy: select the text and copy it.' : ''}
      </span>
    </span>
  )
}

function NewServerWatch({ known }: { known: Set<string> }) {
  const [found, setFound] = useState<ServerRow[]>([])
  useLive(async () => {
    try {
      const page = await get<{ items: ServerRow[] }>('/servers', { limit: 200 })
      setFound(page.items.filter((s) => !known.has(s.id)))
    } catch {}
  })
  if (found.length === 0)
    return (
      <p role="status" class="note">
        Waiting for the server to enrol… This page shows it as soon as its agent connects.
      </p>
    )
  return (
    <div role="status" class="note">
      {found.map((s) => (
        <p key={s.id}>
          <a href={href(`/servers/${s.id}`)}>{s.name}</a> enrolled: <PresenceBadge presence={s.presence} />
        </p>
      ))}
    </div>
  )
}

export function AddServer() {
  const form = useForm()
  const [purpose, setPurpose] = useState('')
  const [minutes, setMinutes] = useState('60')
  const [token, setToken] = useState<InitToken | null>(null)
  const known = useRef(new Set<string>())
  const idem = useIdempotency()
  const url = token ? (/--url (\S+)/.exec(token.install_command)?.[1] ?? location.origin) : location.origin
  const file = '/root/gpuhq-init-token'
  return (
    <Page title="Add a server" actions={<a href={href('/')}>Back to the fleet</a>}>
      <Section title="1. A one-time token">
        <p>The agent on your server enrols once with a one-time token. It works for one server, for at most an hour, and is shown only here, once.</p>
        {!token && (
          <Form
            form={form}
            label="Create a one-time token"
            submit="Create a one-time token"
            busyLabel="Creating…"
            onSubmit={async () => {
              const before = await get<{ items: ServerRow[] }>('/servers', { limit: 200 })
              known.current = new Set(before.items.map((s) => s.id))
              const body: InitCreateBody = { expires_in_s: Number(minutes) * 60, ...(purpose.trim() ? { purpose: purpose.trim() } : {}) }
              const { data } = await request<InitToken>('POST', '/tokens/init', { body, idempotencyKey: idem.keyFor(body) })
              idem.done()
              setToken(data)
            }}
          >
            <TextField
              form={form}
              name="/purpose"
              label="Note (optional)"
              hint="Which machine this is for, for your own records."
              value={purpose}
              onInput={setPurpose}
            />
            <SelectField
              form={form}
              name="/expires_in_s"
              label="Valid for"
              value={minutes}
              onChange={setMinutes}
              options={[
                ['15', '15 minutes'],
                ['30', '30 minutes'],
                ['60', '1 hour'],
              ]}
            />
          </Form>
        )}
        {token && (
          <div class="secret">
            <p>
              <strong>Your one-time token</strong> (valid until {dateTime(token.expires_at)}). Copy it now: it is not shown again, and leaving this page forgets
              it.
            </p>
            <code data-testid="init-token">{token.token}</code>
            <CopyButton text={token.token} label="Copy the token" />
          </div>
        )}
      </Section>
      {token && (
        <>
          <Section title="2. Install the agent">
            <p>On the GPU server, as root, put the token into a file only root can read (paste it, then press Ctrl-D):</p>
            <pre>{`install -m 600 /dev/null ${file} && cat > ${file}`}</pre>
            <p>Then install and start the agent. It reads the token from that file, so the token never appears on a command line:</p>
            <pre>{`curl -fsSL ${url}/agent/install.sh | sudo sh -s -- --url ${url} --token-file ${file}`}</pre>
            <CopyButton text={`curl -fsSL ${url}/agent/install.sh | sudo sh -s -- --url ${url} --token-file ${file}`} label="Copy the install command" />
            <p class="muted small">
              With the agent already installed: <code>{token.install_command}</code>
            </p>
          </Section>
          <Section title="3. Watch it come online">
            <NewServerWatch known={known.current} />
          </Section>
        </>
      )}
    </Page>
  )
}
