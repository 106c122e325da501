import { useState } from 'preact/hooks'
import { ApiError, get, request } from '../lib/api'
import { dateTime, money } from '../lib/format'
import { problemMessage } from '../lib/messages'
import { useIdempotency, useResource } from '../lib/resource'
import { href } from '../lib/router'
import { can } from '../lib/session'
import type { ChangeOrderBody, PlanChange, PlanInfo, Quote, Subscription } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Money } from '../ui/money'
import { Page, Section } from '../ui/layout'
import { Action, Async, ErrorNote } from '../ui/states'
import { TopUpForm } from './topup'

/**
 * The plan (docs/subscription.md): the catalogue, a quote before any change (direction from the
 * prices, the reserve an upgrade needs), the change itself, and the pending change with cancel. An
 * upgrade the balance does not cover waits for a top-up made for it, paid right here.
 */

const max = (p: PlanInfo) => {
  const m = p.capabilities['fleet.servers.max']
  return m === null || m === undefined ? 'unlimited servers' : `up to ${m} server${m === 1 ? '' : 's'}`
}

function QuoteBox({ plan, sub, done }: { plan: PlanInfo; sub: Subscription; done: (c: PlanChange) => void }) {
  const quote = useResource(() => get<Quote>('/subscription/quote', { plan: plan.code }), [plan.code])
  const idem = useIdempotency()
  const [pending, setPending] = useState<ApiError | null>(null)
  const order = async (replace: boolean) => {
    try {
      const { data } = await request<PlanChange>('POST', '/subscription/changes', {
        body: { target_plan: plan.code } satisfies ChangeOrderBody,
        idempotencyKey: idem.keyFor({ target_plan: plan.code, replace }),
        ifMatch: replace ? `"${sub.version}"` : null,
      })
      done(data)
    } catch (e) {
      if (e instanceof ApiError && e.problem.code === 'change_already_pending') setPending(e)
      else throw e
    }
  }
  return (
    <Async r={quote} label="Asking what the change would mean…">
      {(q) => (
        <div class="note" aria-live="polite">
          <p>
            Changing to <strong>{plan.label}</strong> is{' '}
            {q.direction === 'lateral' ? 'a lateral change' : q.direction === 'upgrade' ? 'an upgrade' : 'a downgrade'}: {q.managed_servers} managed server
            {q.managed_servers === 1 ? '' : 's'} at <Money usd={q.monthly_price_per_server_usd} /> per server per month, billed from {q.billing_effective_day}.
          </p>
          {q.direction === 'upgrade' && (
            <p>
              It needs one day in reserve: <Money usd={q.required_reserve_usd} /> against your balance of <Money usd={q.balance_usd} />
              {q.covered ? ', which covers it: it applies at once.' : '. Not covered: the change waits for a top-up, which you can pay next.'}
            </p>
          )}
          {q.direction === 'downgrade' && <p>It takes effect at the date the plan's policy sets; until then you keep {sub.plan?.label}.</p>}
          {q.server_limit !== null && q.managed_servers > q.server_limit && (
            <p class="form-error">Your fleet has more servers than this plan allows ({q.server_limit}); the change would be refused.</p>
          )}
          {pending ? (
            <>
              <p role="alert">{problemMessage(pending)}</p>
              <Action label={`Replace it with ${plan.label}`} run={() => order(true)} />
            </>
          ) : (
            <Action label={`Change to ${plan.label}`} run={() => order(false)} />
          )}
        </div>
      )}
    </Async>
  )
}

function Pending({ change, reload }: { change: PlanChange; reload: () => void }) {
  return (
    <div class="note" data-testid="pending-change">
      <p>
        <StatusBadge status={change.status} /> Change from {change.from_plan} to <strong>{change.target_plan}</strong> ({change.direction}), ordered{' '}
        {dateTime(change.requested_at)}
        {change.status === 'scheduled' && `, effective ${dateTime(change.effective_at)}`}.
      </p>
      {change.status === 'awaiting_payment' && can('admin') && (
        <>
          <p>
            It applies as soon as a top-up made for it is paid. At least <Money usd={change.required_reserve_usd} />:
          </p>
          <TopUpForm
            purpose={{ kind: 'subscription_change', target_plan: change.target_plan, change_id: change.id }}
            amount={Number(change.required_reserve_usd) < 1 ? '1.00' : change.required_reserve_usd}
            submit="Create the invoice for this change"
            onSucceeded={reload}
          />
        </>
      )}
      {can('admin') && (
        <Action
          label="Cancel this change"
          class="danger"
          confirm="Cancel the ordered plan change?"
          run={async () => {
            await request('DELETE', `/subscription/changes/${change.id}`)
            reload()
          }}
        />
      )}
    </div>
  )
}

export function PlanPage() {
  const sub = useResource(() => get<Subscription>('/subscription'), [])
  const plans = useResource(() => get<{ items: PlanInfo[] }>('/plans'), [])
  const [quoting, setQuoting] = useState<string | null>(null)
  const [result, setResult] = useState<PlanChange | null>(null)
  return (
    <Page title="Plan" actions={<a href={href('/billing')}>Back to billing</a>}>
      <Async r={sub} label="Loading your plan…">
        {(s) => (
          <Section title="Your plan">
            <p>
              You are on <strong data-testid="current-plan">{s.plan?.label ?? 'no plan'}</strong>
              {s.plan && ` (${money(s.plan.monthly_price_per_server_usd)} per server per month, ${max(s.plan)})`}.
            </p>
            {result?.status === 'applied' && (
              <p class="note" role="status">
                The change to {result.target_plan} is applied.
              </p>
            )}
            {s.pending_change && <Pending change={s.pending_change} reload={sub.reload} />}
            {!s.pending_change && s.last_change?.status === 'refused' && (
              <p class="form-error">
                The last change (to {s.last_change.target_plan}) was refused: {s.last_change.refusal_reason?.replaceAll('_', ' ')}.
              </p>
            )}
          </Section>
        )}
      </Async>
      <Section title="Plans">
        <Async r={plans} label="Loading the plans…">
          {({ items }) => (
            <div class="grid">
              {items.map((p) => {
                const current = sub.data?.plan?.code === p.code
                return (
                  <article class="panel" key={p.code} aria-labelledby={`plan-${p.code}`}>
                    <h3 id={`plan-${p.code}`}>{p.label}</h3>
                    <p>{p.contract_priced ? 'Priced by contract' : `${money(p.monthly_price_per_server_usd)} per server per month`}</p>
                    <ul>
                      <li>{max(p)}</li>
                      <li>Pricing strategy: {p.capabilities.strategy ? 'yes' : 'no'}</li>
                      <li>AI-assistant access: {p.capabilities.ai_access ? 'yes' : 'no'}</li>
                    </ul>
                    {current ? (
                      <p>
                        <span class="badge ok">Current plan</span>
                      </p>
                    ) : p.contract_priced ? (
                      <p class="muted">Ask the operator.</p>
                    ) : (
                      can('admin') &&
                      (quoting === p.code && sub.data ? (
                        <QuoteBox
                          plan={p}
                          sub={sub.data}
                          done={(c) => {
                            setResult(c)
                            setQuoting(null)
                            sub.reload()
                          }}
                        />
                      ) : (
                        <button type="button" onClick={() => setQuoting(p.code)}>
                          See what changing to {p.label} means
                        </button>
                      ))
                    )}
                  </article>
                )
              })}
            </div>
          )}
        </Async>
        {sub.error && <ErrorNote error={sub.error} retry={sub.reload} />}
      </Section>
    </Page>
  )
}
