import { useState } from 'preact/hooks'
import { newKey, request } from '../lib/api'
import { useIdempotency } from '../lib/resource'
import type { Link, LinkMaintenanceBody, OfferAnswer, OfferBody } from '../lib/api-types'
import { Form, SelectField, TextField, useForm } from '../ui/form'
import { Action } from '../ui/states'
import { LinkListing } from './link-listing'

/**
 * What an admin does with one link: publish or update the offer (marketplace_a in USD per GPU-hour,
 * marketplace_b per day per server in a coin), withdraw it, announce or cancel a maintenance window
 * (marketplace_a only), unlink. Each refusal of the marketplace comes back as the API's problem.
 */

function OfferForm({ link, done }: { link: Link; done: (warnings: string[]) => void }) {
  const form = useForm()
  const a = link.marketplace === 'marketplace_a'
  const coin = Object.keys(link.marketplace_b?.coin_prices ?? {})[0] ?? 'CLORE-Blockchain'
  // marketplace_b's prices are per coin, each an on-demand and a spot price (decimal strings).
  const [price, setPrice] = useState(a ? (link.remote.price_gpu_hour ?? '') : (link.marketplace_b?.coin_prices?.[coin]?.on_demand ?? ''))
  const [minBid, setMinBid] = useState(link.remote.min_bid_hour ?? '')
  const [coinName, setCoinName] = useState(coin)
  const idem = useIdempotency()
  return (
    <Form
      form={form}
      label={`Offer of ${link.external_machine_id}`}
      submit="Publish the offer"
      busyLabel="Publishing…"
      onSubmit={async () => {
        const body: OfferBody = a
          ? { price_gpu_hour: price.trim(), ...(minBid.trim() ? { min_bid_hour: minBid.trim() } : {}) }
          : { coin_prices: { [coinName]: { on_demand: price.trim() } } }
        const { data } = await request<OfferAnswer>('PUT', `/marketplaces/links/${link.server_id}/${link.marketplace}/offer`, {
          body,
          idempotencyKey: idem.keyFor(body),
        })
        idem.done()
        done(data.warnings.map((w) => w.message))
      }}
    >
      {a ? (
        <>
          <TextField form={form} name="/price_gpu_hour" label="Price per GPU-hour (USD)" inputMode="decimal" required value={price} onInput={setPrice} />
          <TextField form={form} name="/min_bid_hour" label="Lowest bid per GPU-hour (USD, optional)" inputMode="decimal" value={minBid} onInput={setMinBid} />
        </>
      ) : (
        <>
          <SelectField
            form={form}
            name="/coin_prices"
            label="Coin"
            value={coinName}
            onChange={setCoinName}
            options={[
              ['CLORE-Blockchain', 'CLORE'],
              ['bitcoin', 'Bitcoin'],
              ['USD-Blockchain', 'USD (on chain)'],
            ]}
          />
          <TextField
            form={form}
            name={`/coin_prices/${coinName}/on_demand`}
            label="Price per day for the whole server"
            inputMode="decimal"
            value={price}
            onInput={setPrice}
          />
        </>
      )}
    </Form>
  )
}

type Category = LinkMaintenanceBody['category']
/** The window's categories marketplace_a takes (the model's list: one renamed there fails the typecheck here). */
const CATEGORIES: Category[] = ['power', 'internet', 'disk', 'gpu', 'software', 'other']

function MaintenanceForm({ link, done }: { link: Link; done: () => void }) {
  const form = useForm()
  const [starts, setStarts] = useState('')
  const [hours, setHours] = useState('2')
  const [category, setCategory] = useState<Category>('other')
  const [reason, setReason] = useState('')
  const idem = useIdempotency()
  return (
    <Form
      form={form}
      label={`Maintenance window of ${link.external_machine_id}`}
      submit="Announce the window"
      onSubmit={async () => {
        const startsAt = starts ? new Date(starts).toISOString() : ''
        const body: LinkMaintenanceBody = { starts_at: startsAt, hours: Number(hours), category, reason: reason.trim() || null }
        await request('PUT', `/marketplaces/links/${link.server_id}/${link.marketplace}/maintenance`, { body, idempotencyKey: idem.keyFor(body) })
        idem.done()
        done()
      }}
    >
      <TextField form={form} name="/starts_at" label="Starts (your local time)" type="datetime-local" required value={starts} onInput={setStarts} />
      <TextField form={form} name="/hours" label="Hours" inputMode="numeric" value={hours} onInput={setHours} />
      <SelectField
        form={form}
        name="/category"
        label="Category"
        value={category}
        onChange={(v) => setCategory(v as Category)}
        options={CATEGORIES.map((c) => [c, c])}
      />
      <TextField form={form} name="/reason" label="Reason for the renters (optional)" value={reason} onInput={setReason} />
    </Form>
  )
}

export function LinkActions({ link, serverName, changed }: { link: Link; serverName: string; changed: () => void }) {
  const [note, setNote] = useState<string | null>(null)
  const base = `/marketplaces/links/${link.server_id}/${link.marketplace}`
  return (
    <details>
      <summary>
        Manage <span class="visually-hidden">{`${serverName} on ${link.marketplace}`}</span>
      </summary>
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <h4>Offer</h4>
      <OfferForm
        link={link}
        done={(warnings) => {
          setNote(['Offer published.', ...warnings].join(' '))
          changed()
        }}
      />
      <Action
        label="Withdraw the offer"
        run={async () => {
          await request('DELETE', `${base}/offer`, { idempotencyKey: newKey() })
          setNote('Offer withdrawn.')
          changed()
        }}
      />
      {link.marketplace === 'marketplace_a' && (
        <>
          <h4>Maintenance window</h4>
          <MaintenanceForm
            link={link}
            done={() => {
              setNote('Maintenance window announced to the renters.')
              changed()
            }}
          />
          {link.remote.maintenance_announced && (
            <Action
              label="Cancel the announced windows"
              run={async () => {
                await request('DELETE', `${base}/maintenance`, { idempotencyKey: newKey() })
                setNote('Maintenance windows cancelled.')
                changed()
              }}
            />
          )}
          <LinkListing
            link={link}
            done={(text) => {
              setNote(text)
              changed()
            }}
          />
        </>
      )}
      <h4>Link</h4>
      <Action
        label="Unlink"
        class="danger"
        confirm={`Unlink ${serverName} from machine ${link.external_machine_id}? Nothing changes at the marketplace.`}
        run={async () => {
          await request('DELETE', base)
          changed()
        }}
      />
    </details>
  )
}
