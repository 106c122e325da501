import { useState } from 'preact/hooks'
import { dateTime } from '../lib/format'
import { useLive } from '../lib/live'
import { usePaged, useSnapshot } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { Billing, ChargeDay, LedgerEntry, Topup } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Money } from '../ui/money'
import { Page, Section } from '../ui/layout'
import { Async, PagedTable } from '../ui/states'
import { TopUpForm } from './topup'

/** Billing (docs/billing.md): the balance and account state, spend tiles, top-ups, the ledger by range, the daily charges. */

type Entry = LedgerEntry

const TILES: [keyof Billing['tiles'], string][] = [
  ['today', 'Today'],
  ['yesterday', 'Yesterday'],
  ['7d', 'Last 7 days'],
  ['month', 'This month'],
  ['prev_month', 'Last month'],
]

function Overview({ b }: { b: Billing }) {
  return (
    <>
      <dl class="tiles" aria-label="Balance">
        <div class="tile">
          <dt>Balance</dt>
          <dd data-testid="balance">
            <Money usd={b.balance_usd} />
          </dd>
        </div>
        <div class="tile">
          <dt>Account</dt>
          <dd>
            <StatusBadge status={b.account_state} />
          </dd>
        </div>
        <div class="tile">
          <dt>Plan</dt>
          <dd>{b.tariff.label ?? 'none'}</dd>
        </div>
        <div class="tile">
          <dt>Per day now</dt>
          <dd>
            <Money usd={b.estimate.per_day_usd} />
          </dd>
        </div>
        <div class="tile">
          <dt>Balance lasts</dt>
          <dd>{b.days_left === null ? '—' : `${b.days_left} days`}</dd>
        </div>
      </dl>
      {b.account_state !== 'active' && (
        <p class="form-error" role="alert">
          {b.account_state === 'frozen'
            ? `The account is frozen since ${dateTime(b.frozen_at)}: fleet changes are refused until a top-up brings the balance above zero.`
            : `The account is in grace until ${dateTime(b.grace_ends_at)}: top up before then to avoid a freeze.`}
        </p>
      )}
      <h3>Spend ({b.timezone} days)</h3>
      <dl class="tiles" aria-label="Spend">
        {TILES.map(([k, label]) => (
          <div class="tile" key={k}>
            <dt>{label}</dt>
            <dd>
              <Money usd={b.tiles[k].spend_usd} />
            </dd>
          </div>
        ))}
      </dl>
      <p class="muted small">
        {b.estimate.managed_servers} managed servers on {b.tariff.label ?? 'no plan'} (<Money usd={b.tariff.monthly_price_per_server_usd} /> per server per
        month). <a href={href('/billing/plan')}>Change plan</a>
      </p>
    </>
  )
}

function Ledger({ version }: { version: number }) {
  const [range, setRange] = useState('')
  const [kind, setKind] = useState('')
  const ledger = usePaged<Entry>('/billing/ledger', { range, kind, limit: 50 }, [range, kind, version])
  return (
    <Section title="Ledger">
      <div class="form inline">
        <div class="field">
          <label for="ledger-range">Period</label>
          <select id="ledger-range" value={range} onChange={(e) => setRange(e.currentTarget.value)}>
            <option value="">All</option>
            {TILES.map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="ledger-kind">Kind</label>
          <select id="ledger-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
            <option value="">All</option>
            <option value="charge">Charges</option>
            <option value="topup">Top-ups</option>
            <option value="adjustment">Adjustments</option>
          </select>
        </div>
      </div>
      <PagedTable
        r={ledger}
        loading="Loading the ledger…"
        empty="No entries in this period."
        label="Ledger entries"
        head={
          <>
            <th scope="col">When</th>
            <th scope="col">Kind</th>
            <th scope="col">Detail</th>
            <th scope="col" class="num">
              Amount
            </th>
            <th scope="col" class="num">
              Balance after
            </th>
          </>
        }
        row={(e) => (
          <tr key={e.id}>
            <td class="nowrap">{dateTime(e.occurred_at)}</td>
            <td>{e.kind}</td>
            <td>{e.detail}</td>
            <td class="num">
              <Money usd={e.amount_usd} />
            </td>
            <td class="num">
              <Money usd={e.balance_after_usd} />
            </td>
          </tr>
        )}
      />
    </Section>
  )
}

function Topups({ version }: { version: number }) {
  const list = usePaged<Topup>('/billing/topups', { limit: 20 }, [version])
  return (
    <PagedTable
      r={list}
      loading="Loading the top-ups…"
      empty="No top-ups yet."
      label="Top-ups"
      head={
        <>
          <th scope="col">Started</th>
          <th scope="col">Status</th>
          <th scope="col">Method</th>
          <th scope="col" class="num">
            Invoiced
          </th>
          <th scope="col" class="num">
            Credited
          </th>
        </>
      }
      row={(t) => (
        <tr key={t.id}>
          <td class="nowrap">{dateTime(t.created_at)}</td>
          <td>
            <StatusBadge status={t.status} />
            {t.purpose.kind === 'subscription_change' && <span class="muted small"> for the plan {t.purpose.target_plan}</span>}
          </td>
          <td>{t.payment_method}</td>
          <td class="num">
            <Money usd={t.amount_usd} />
          </td>
          <td class="num">
            <Money usd={t.credited_usd} />
          </td>
        </tr>
      )}
    />
  )
}

function Charges() {
  const charges = usePaged<ChargeDay>('/billing/charges', { limit: 31 }, [])
  return (
    <Section title="Daily charges">
      <PagedTable
        r={charges}
        loading="Loading the charges…"
        empty="No charges yet: each managed server is charged by the hour."
        label="Daily charges"
        head={
          <>
            <th scope="col">Day (UTC)</th>
            <th scope="col" class="num">
              Server-hours
            </th>
            <th scope="col" class="num">
              Amount
            </th>
            <th scope="col">Per server</th>
          </>
        }
        row={(d) => (
          <tr key={d.day}>
            <td>{d.day}</td>
            <td class="num">{d.server_hours}</td>
            <td class="num">
              <Money usd={d.amount_usd} />
            </td>
            <td>
              <a href={`/api/v1/billing/charges/${d.day}.csv`} download={`gpuhq-charges-${d.day}.csv`}>
                CSV of {d.day}
              </a>
            </td>
          </tr>
        )}
      />
    </Section>
  )
}

export function BillingPage() {
  const billing = useSnapshot<Billing>('/billing', {}, [])
  const [paid, setPaid] = useState(0)
  useLive(() => void billing.refresh())
  return (
    <Page title="Billing" actions={<a href={href('/billing/plan')}>Plan</a>}>
      <Async r={billing} label="Loading the balance…">
        {(b) => <Overview b={b} />}
      </Async>
      <Section title="Top up">
        {can('admin') ? (
          <TopUpForm
            onSucceeded={() => {
              billing.reload()
              setPaid(paid + 1)
            }}
          />
        ) : (
          <p>Only owners and admins can top up.</p>
        )}
        <h3>Earlier top-ups</h3>
        <Topups version={paid} />
      </Section>
      <Ledger version={paid} />
      <Charges />
    </Page>
  )
}
