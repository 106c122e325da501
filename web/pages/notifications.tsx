import { useState } from 'preact/hooks'
import { get, newKey, request } from '../lib/api'
import { dateTime } from '../lib/format'
import { useIdempotency, usePaged, useResource } from '../lib/resource'
import { can, me } from '../lib/session'
import type { ChatLink, EmailConnectBody, NotificationItem, NotificationSettings, NotificationSettingsPatch } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { CheckField, Field, Form, TextField, useForm } from '../ui/form'
import { Page, Section } from '../ui/layout'
import { Action, Async, PagedTable, TableWrap } from '../ui/states'

/**
 * Notifications (docs/notifications.md): the Telegram chat and email channels, the rules per
 * category and channel (email only for the critical ones), quiet hours in the account's time zone,
 * a test, and the history of what was sent.
 */

type Channel = Settings['channels']['chat']
type Rule = Settings['rules'][keyof Settings['rules']]
type Settings = NotificationSettings
type Notification = NotificationItem

const CATEGORIES: Record<string, string> = {
  rental: 'Rentals',
  temp: 'Temperature',
  error: 'Agent errors',
  offline: 'Servers offline',
  price: 'Prices',
  maint: 'Maintenance',
  balance: 'Low balance',
  payment: 'Payments',
  weekly: 'Weekly summary',
}

function ChatChannel({ ch, changed }: { ch: Channel; changed: () => void }) {
  const [link, setLink] = useState<ChatLink | null>(null)
  return (
    <article class="panel" aria-labelledby="ch-chat">
      <h3 id="ch-chat">Telegram</h3>
      <p>
        <StatusBadge status={ch.status} /> {ch.destination_masked ?? ''}
        {ch.disabled_reason && <span class="muted"> ({ch.disabled_reason})</span>}
      </p>
      {link && (
        <div class="secret" role="status">
          <p>
            Send this code to the bot{link.bot_username ? ` @${link.bot_username}` : ''} before {dateTime(link.expires_at)}:
          </p>
          <code>{link.code}</code>
          <p>{link.instructions}</p>
          {link.deep_link && /^https:\/\//.test(link.deep_link) && (
            <p>
              <a href={link.deep_link} target="_blank" rel="noopener noreferrer">
                Open the chat with the bot (Telegram, a new tab)
              </a>
            </p>
          )}
        </div>
      )}
      {can('admin') && (
        <div class="actions">
          <Action
            label={ch.status === 'not_connected' ? 'Link a Telegram chat' : 'Link another chat'}
            run={async () => {
              setLink((await request<ChatLink>('POST', '/notifications/chat/link', { idempotencyKey: newKey() })).data)
            }}
          />
          {ch.status !== 'not_connected' && <PauseResume kind="chat" status={ch.status} changed={changed} />}
        </div>
      )}
    </article>
  )
}

function PauseResume({ kind, status, changed }: { kind: 'chat' | 'email'; status: string; changed: () => void }) {
  const next = status === 'paused' ? 'connected' : 'paused'
  return (
    <Action
      label={status === 'paused' ? 'Resume' : 'Pause'}
      run={async () => {
        await request('PUT', '/notifications/settings', { body: { channels: { [kind]: { status: next } } } satisfies NotificationSettingsPatch })
        changed()
      }}
    />
  )
}

function EmailChannel({ ch, changed }: { ch: Channel; changed: () => void }) {
  const form = useForm()
  const idem = useIdempotency()
  const [address, setAddress] = useState('')
  const [code, setCode] = useState('')
  const [sent, setSent] = useState(false)
  return (
    <article class="panel" aria-labelledby="ch-email">
      <h3 id="ch-email">Email (critical alerts only)</h3>
      <p>
        <StatusBadge status={ch.status} /> {ch.destination_masked ?? ''}
      </p>
      {can('admin') && (
        <>
          <div class="actions">
            <Action
              label={`Use my account email (${me.value?.email})`}
              run={async () => {
                await request('POST', '/notifications/email/connect', { body: {} satisfies EmailConnectBody, idempotencyKey: newKey() })
                changed()
              }}
            />
            {ch.status !== 'not_connected' && <PauseResume kind="email" status={ch.status} changed={changed} />}
          </div>
          <Form
            form={form}
            label="Another address"
            submit={sent ? 'Confirm the code' : 'Send a code to this address'}
            onSubmit={async () => {
              const body: EmailConnectBody = sent ? { address: address.trim(), code: code.trim() } : { address: address.trim() }
              await request('POST', '/notifications/email/connect', { body, idempotencyKey: idem.keyFor(body) })
              idem.done()
              if (sent) {
                setSent(false)
                setCode('')
                changed()
              } else setSent(true)
            }}
          >
            <TextField form={form} name="/address" label="Another address" type="email" value={address} onInput={setAddress} />
            {sent && <TextField form={form} name="/code" label="Code from that mailbox" inputMode="numeric" value={code} onInput={setCode} />}
          </Form>
        </>
      )}
    </article>
  )
}

function RulesForm({ s, saved }: { s: Settings; saved: (s: Settings) => void }) {
  const form = useForm()
  const idem = useIdempotency()
  const [rules, setRules] = useState<Record<string, Rule>>(s.rules)
  const [quiet, setQuiet] = useState(s.quiet_hours)
  const [done, setDone] = useState(false)
  const admin = can('admin')
  return (
    <Form
      form={form}
      class="form wide"
      label="Rules and quiet hours"
      submit="Save the rules and quiet hours"
      busyLabel="Saving…"
      onSubmit={async () => {
        setDone(false)
        const body: NotificationSettingsPatch = { rules, quiet_hours: quiet }
        const { data } = await request<Settings>('PUT', '/notifications/settings', { body, idempotencyKey: idem.keyFor(body), ifMatch: `"${s.version}"` })
        idem.done()
        saved(data)
        setDone(true)
      }}
    >
      <TableWrap label="Rules">
        <table>
          <caption class="muted small">What is sent where. Email carries only the critical categories, and critical ones ignore quiet hours.</caption>
          <thead>
            <tr>
              <th scope="col">Category</th>
              <th scope="col">Telegram</th>
              <th scope="col">Email</th>
            </tr>
          </thead>
          <tbody>
            {s.event_keys.map((k) => {
              const critical = s.crit_event_keys.includes(k)
              return (
                <tr key={k}>
                  <th scope="row">
                    {CATEGORIES[k] ?? k}
                    {critical && (
                      <>
                        {' '}
                        <span class="badge warn">critical</span>
                      </>
                    )}
                  </th>
                  {(['chat', 'email'] as const).map((channel) => (
                    <td key={channel}>
                      <CheckField
                        form={form}
                        name={`/rules/${k}/${channel}`}
                        label={<span class="visually-hidden">{`${CATEGORIES[k] ?? k} by ${channel === 'chat' ? 'Telegram' : 'email'}`}</span>}
                        checked={rules[k]?.[channel] ?? false}
                        disabled={!admin || (channel === 'email' && !critical && !rules[k]?.email)}
                        onChange={(v) => setRules({ ...rules, [k]: { ...rules[k]!, [channel]: v } })}
                      />
                    </td>
                  ))}
                </tr>
              )
            })}
          </tbody>
        </table>
      </TableWrap>
      <fieldset class="quiet">
        <legend>Quiet hours ({me.value?.timezone ?? 'account time zone'})</legend>
        <CheckField
          form={form}
          name="/quiet_hours/enabled"
          label="Hold non-critical notifications during quiet hours"
          checked={quiet.enabled}
          disabled={!admin}
          onChange={(v) => setQuiet({ ...quiet, enabled: v })}
        />
        <div class="form inline">
          <Field form={form} name="/quiet_hours/from" label="From">
            {(p) => <input {...p} type="time" value={quiet.from} disabled={!admin} onInput={(e) => setQuiet({ ...quiet, from: e.currentTarget.value })} />}
          </Field>
          <Field form={form} name="/quiet_hours/to" label="To">
            {(p) => <input {...p} type="time" value={quiet.to} disabled={!admin} onInput={(e) => setQuiet({ ...quiet, to: e.currentTarget.value })} />}
          </Field>
        </div>
        <p class="hint">A window may cross midnight (22:00 to 07:00).</p>
      </fieldset>
      {done && (
        <p class="note" role="status">
          Saved.
        </p>
      )}
    </Form>
  )
}

function History({ version }: { version: number }) {
  const list = usePaged<Notification>('/notifications/history', { limit: 20 }, [version])
  return (
    <PagedTable
      r={list}
      loading="Loading the history…"
      empty="Nothing sent yet."
      label="Notification history"
      head={
        <>
          <th scope="col">When</th>
          <th scope="col">Category</th>
          <th scope="col">Title</th>
          <th scope="col">Deliveries</th>
        </>
      }
      row={(n) => (
        <tr key={n.id}>
          <td class="nowrap">{dateTime(n.created_at)}</td>
          <td>{CATEGORIES[n.category] ?? n.category}</td>
          <td>{n.title}</td>
          <td>
            {n.deliveries.length === 0
              ? 'none'
              : n.deliveries.map((d) => (
                  <span key={d.id}>
                    {d.channel}: <StatusBadge status={d.status} /> {d.last_error ?? ''}{' '}
                  </span>
                ))}
          </td>
        </tr>
      )}
    />
  )
}

export function NotificationsPage() {
  const settings = useResource(() => get<Settings>('/notifications/settings'), [])
  const [sent, setSent] = useState(0)
  return (
    <Page title="Notifications">
      <Async r={settings} label="Loading the settings…">
        {(s) => (
          <>
            <Section title="Channels">
              <div class="grid">
                <ChatChannel ch={s.channels.chat} changed={settings.reload} />
                <EmailChannel ch={s.channels.email} changed={settings.reload} />
              </div>
              {can('admin') && (
                <Action
                  label="Send a test notification"
                  run={async () => {
                    await request('POST', '/notifications/test', { body: {}, idempotencyKey: newKey() })
                    setSent(sent + 1)
                  }}
                />
              )}
            </Section>
            <Section title="Rules and quiet hours">
              <RulesForm s={s} saved={settings.set} />
            </Section>
          </>
        )}
      </Async>
      <Section title="History">
        <History version={sent} />
      </Section>
    </Page>
  )
}
