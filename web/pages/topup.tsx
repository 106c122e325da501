import { useEffect, useRef, useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { dateTime, money } from '../lib/format'
import { useLive } from '../lib/live'
import { useIdempotency, useInterval, useResource } from '../lib/resource'
import type { PaymentMethod, Topup, TopupCreateBody } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Money } from '../ui/money'
import { Form, SelectField, TextField, useForm } from '../ui/form'
import { Async } from '../ui/states'

/**
 * A top-up (docs/payments.md): the invoice is created here, paid on the provider's page (opened as
 * a navigation in a new tab, never embedded), and this page asks for its status until the verified
 * notification made it `succeeded` (or it ended otherwise). Only `succeeded` means the money arrived.
 */

type Method = PaymentMethod
const OPEN = new Set(['creating', 'partially_paid'])

/** Only http(s) addresses become links: a provider's answer is never trusted to be one. */
const safeUrl = (u: string | undefined) => {
  if (!u) return null
  try {
    const url = new URL(u)
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null
  } catch {
    return null
  }
}

function TopupProgress({ initial, onEnded }: { initial: Topup; onEnded?: (t: Topup) => void }) {
  const [t, setT] = useState(initial)
  const told = useRef(false)
  const check = async () => {
    if (!OPEN.has(t.status)) return
    try {
      setT(await get<Topup>(`/billing/topups/${t.id}`))
    } catch {}
  }
  useInterval(check, OPEN.has(t.status) ? 2000 : null)
  useLive(() => void check())
  useEffect(() => {
    if (!OPEN.has(t.status) && !told.current) {
      told.current = true
      onEnded?.(t)
    }
  }, [t.status])
  const url = safeUrl(t.checkout_url)
  return (
    <div class="note">
      <p aria-live="polite">
        Top-up of <Money usd={t.amount_usd} />: <StatusBadge status={t.status} />
        {t.status === 'succeeded' && (
          <strong>
            {' '}
            Payment received: <Money usd={t.credited_usd} /> credited.
          </strong>
        )}
        {t.status === 'partially_paid' && ` ${money(t.credited_usd)} received so far.`}
        {t.status === 'review' && ` Set aside for the operator to check${t.review_reason ? `: ${t.review_reason}` : ''}.`}
        {(t.status === 'expired' || t.status === 'failed') && ' Nothing was credited. Start a new top-up to try again.'}
      </p>
      {OPEN.has(t.status) && url && (
        <p>
          <a href={url} target="_blank" rel="noopener noreferrer" class="button primary">
            Pay at {t.provider} (opens a new tab)
          </a>{' '}
          <span class="muted small">
            This page updates by itself once the provider confirms the payment. The invoice is valid until {dateTime(t.expires_at)}.
          </span>
        </p>
      )}
    </div>
  )
}

export function TopUpForm({
  purpose,
  amount: initialAmount = '25.00',
  onSucceeded,
  submit = 'Create the invoice',
}: {
  purpose?: { kind: 'subscription_change'; target_plan: string; change_id: string }
  amount?: string
  onSucceeded?: (t: Topup) => void
  submit?: string
}) {
  const methods = useResource(() => get<{ items: Method[] }>('/billing/payment-methods'), [])
  const form = useForm()
  const [amount, setAmount] = useState(initialAmount)
  const [method, setMethod] = useState('')
  const idem = useIdempotency()
  const [topup, setTopup] = useState<Topup | null>(null)
  const [ended, setEnded] = useState<Topup | null>(null)
  return (
    <Async r={methods} label="Loading the payment methods…">
      {({ items }) => {
        const chosen = items.find((m) => m.code === method) ?? items[0]
        if (items.length === 0) return <p class="note">No payment provider is configured on this gpuhq: ask its operator to credit your balance.</p>
        return (
          <>
            {(!topup || ended?.id === topup.id) && (
              <Form
                form={form}
                label="Top up"
                submit={submit}
                busyLabel="Creating the invoice…"
                onSubmit={async () => {
                  const body: TopupCreateBody = { amount_usd: amount.trim(), payment_method: chosen!.code, ...(purpose ? { purpose } : {}) }
                  const { data } = await request<Topup>('POST', '/billing/topups', { body, idempotencyKey: idem.keyFor(body) })
                  idem.done()
                  setTopup(data)
                }}
              >
                <TextField
                  form={form}
                  name="/amount_usd"
                  label="Amount (USD)"
                  inputMode="decimal"
                  hint={`At least ${money(chosen!.min_amount_usd)} with ${chosen!.label}.`}
                  value={amount}
                  onInput={setAmount}
                />
                <SelectField
                  form={form}
                  name="/payment_method"
                  label="Payment method"
                  value={chosen!.code}
                  onChange={setMethod}
                  options={items.map((m) => [m.code, m.label])}
                />
              </Form>
            )}
            {topup && (
              <TopupProgress
                key={topup.id}
                initial={topup}
                onEnded={(t) => {
                  setEnded(t)
                  if (t.status === 'succeeded') onSucceeded?.(t)
                }}
              />
            )}
          </>
        )
      }}
    </Async>
  )
}
