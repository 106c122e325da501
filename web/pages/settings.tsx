import { useState } from 'preact/hooks'
import { request } from '../lib/api'
import { dateTime, shownZone } from '../lib/format'
import { href } from '../lib/router'
import { type Me, me, signedIn } from '../lib/session'
import type { MePatchBody } from '../lib/api-types'
import { Form, SelectField, TextField, useForm } from '../ui/form'
import { Page, Section, ThemePicker } from '../ui/layout'
import { WatchdogRules } from './watchdog'

/**
 * Settings (docs/console.md "Settings"): the member's profile (GET/PATCH /me: display name, the time
 * zone every date of the console is shown in, which also counts the billing tiles' days), the theme,
 * the watchdog's rules (turn them on, see their ladders), and the pages that hold the rest of the
 * account's settings.
 */

/** Every IANA zone the browser knows, UTC first; the member's own kept even if the browser lacks it. */
function zones(current: string): string[] {
  const known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : []
  return [...new Set(['UTC', current, ...known])]
}

function Profile({ profile }: { profile: Me }) {
  const form = useForm()
  const [name, setName] = useState(profile.display_name ?? '')
  const [zone, setZone] = useState(profile.timezone)
  const [saved, setSaved] = useState(false)
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone
  return (
    <Form
      form={form}
      label="Profile"
      submit="Save the profile"
      busyLabel="Saving…"
      onSubmit={async () => {
        setSaved(false)
        const { data } = await request<Me>('PATCH', '/me', { body: { display_name: name.trim() || null, timezone: zone } satisfies MePatchBody })
        signedIn(data)
        setSaved(true)
      }}
    >
      <dl class="facts">
        <dt>Email</dt>
        <dd>{profile.email}</dd>
        <dt>Role</dt>
        <dd>{profile.role}</dd>
        <dt>Member since</dt>
        <dd>{dateTime(profile.created_at)}</dd>
      </dl>
      <TextField form={form} name="/display_name" label="Display name" hint="Shown in the header; empty shows your email." value={name} onInput={setName} />
      <SelectField
        form={form}
        name="/timezone"
        label="Time zone"
        hint={`Every date and time of the console is shown in it, and your billing days are counted in it. This browser is in ${browserZone}.`}
        value={zone}
        onChange={setZone}
        options={zones(profile.timezone).map((z) => [z, z])}
      />
      {saved && (
        <p class="note" role="status">
          Saved. Times are shown in {shownZone()}.
        </p>
      )}
    </Form>
  )
}

export function SettingsPage() {
  const profile = me.value
  return (
    <Page title="Settings">
      <Section title="Profile">{profile && <Profile profile={profile} />}</Section>
      <Section title="Display">
        <ThemePicker />
        <p class="muted small">Kept in this browser. System follows the light or dark setting of your device.</p>
      </Section>
      <WatchdogRules />
      <Section title="More settings">
        <ul class="links">
          <li>
            <a href={href('/notifications')}>Notifications</a>: Telegram and email channels, which alerts reach you, quiet hours.
          </li>
          <li>
            <a href={href('/tokens')}>Tokens</a>: personal access tokens for scripts and the API.
          </li>
          <li>
            <a href={href('/ai')}>AI access</a>: an AI assistant's access to your fleet.
          </li>
          <li>
            <a href={href('/billing/plan')}>Plan</a> and <a href={href('/billing')}>billing</a>: balance, top-ups, your plan.
          </li>
          <li>
            <a href={href('/earnings')}>Cost basis</a> (on the earnings page): electricity tariff and the platforms' commission.
          </li>
        </ul>
      </Section>
    </Page>
  )
}
