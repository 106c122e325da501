import { useState } from 'preact/hooks'
import { newKey, request } from '../lib/api'
import type { Link } from '../lib/api-types'
import { Form, TextField, useForm } from '../ui/form'
import { Action } from '../ui/states'

/**
 * A marketplace_a link's listing settings (docs/marketplaces.md "Rolling end dates", "Idle jobs"):
 * keep the offer's end date N days ahead, and the idle job Vast runs while no renter holds the GPUs.
 */
export function LinkListing({ link, done }: { link: Link; done: (note: string) => void }) {
  const base = `/marketplaces/links/${link.server_id}/${link.marketplace}`
  const endForm = useForm()
  const jobForm = useForm()
  const [days, setDays] = useState(link.listing.end_date_days === null ? '' : String(link.listing.end_date_days))
  const [image, setImage] = useState(link.listing.idle_job?.image ?? '')
  const [args, setArgs] = useState(link.listing.idle_job?.args ?? '')
  const [price, setPrice] = useState(link.listing.idle_job?.price_gpu_hour ?? '')
  return (
    <>
      <h4>Rolling end date</h4>
      <Form
        form={endForm}
        label={`End date of ${link.external_machine_id}`}
        submit="Keep it ahead"
        onSubmit={async () => {
          await request('PUT', `${base}/rolling-end-date`, { body: { days: Number(days) }, idempotencyKey: newKey() })
          done(`The end date is kept at least ${days} days ahead from the next sync on.`)
        }}
      >
        <TextField
          form={endForm}
          name="/days"
          label="Days ahead (8 or more)"
          hint="Extended before the platform's seven-day warning"
          inputMode="numeric"
          value={days}
          onInput={setDays}
        />
      </Form>
      {link.listing.end_date_days !== null && (
        <Action
          label="Stop keeping it ahead"
          run={async () => {
            await request('DELETE', `${base}/rolling-end-date`)
            done('The end date is no longer extended.')
          }}
        />
      )}
      <h4>Idle job</h4>
      <Form
        form={jobForm}
        label={`Idle job of ${link.external_machine_id}`}
        submit="Set the idle job"
        busyLabel="Setting…"
        onSubmit={async () => {
          await request('PUT', `${base}/idle-job`, { body: { image: image.trim(), args, price_gpu_hour: price.trim() }, idempotencyKey: newKey() })
          done('Idle job set.')
        }}
      >
        <TextField form={jobForm} name="/image" label="Image" value={image} onInput={setImage} />
        <TextField form={jobForm} name="/args" label="Arguments (optional)" value={args} onInput={setArgs} />
        <TextField form={jobForm} name="/price_gpu_hour" label="Idle job USD per GPU-hour" inputMode="decimal" value={price} onInput={setPrice} />
      </Form>
      {link.listing.idle_job && (
        <Action
          label="Remove the idle job"
          run={async () => {
            await request('DELETE', `${base}/idle-job`, { idempotencyKey: newKey() })
            done('Idle job removed.')
          }}
        />
      )}
    </>
  )
}
