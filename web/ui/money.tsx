import { money, price } from '../lib/format'

/**
 * Money on a page: the amount for people (lib/format.ts: 2 decimals, or up to 4 for a price per
 * unit), never broken across lines, with the exact figure the API sent in the hover title.
 */
export function Money({ usd, empty, per }: { usd: string | null | undefined; empty?: string; per?: 'price' }) {
  if (usd === null || usd === undefined) return <>{empty ?? '—'}</>
  const shown = per === 'price' ? price(usd) : money(usd)
  return (
    <span class="money" title={`${usd} USD`} data-usd={usd}>
      {shown}
    </span>
  )
}

/** A price per GPU-hour or per kWh: up to 4 decimals. */
export const Price = ({ usd, empty }: { usd: string | null | undefined; empty?: string }) => <Money usd={usd} empty={empty} per="price" />
