import { get } from '../lib/api'
import { dateTime, gpuModelName, marketplaceName } from '../lib/format'
import { usePaged, useResource } from '../lib/resource'
import type { Operation, ServerRow, Standing, Supply } from '../lib/api-types'
import { StatusBadge } from '../ui/badges'
import { Price } from '../ui/money'
import { Section } from '../ui/layout'
import { Async, DataTable, Empty, PagedTable } from '../ui/states'

/** Market standing of each offer, supply against the market, and every call gpuhq made to a marketplace. */

export function Market({ servers, version }: { servers: ServerRow[]; version: number }) {
  const standing = useResource(() => get<{ items: Standing[] }>('/marketplaces/prices/standing'), [version])
  const supply = useResource(() => get<{ items: Supply[] }>('/marketplaces/supply'), [version])
  const ops = usePaged<Operation>('/marketplaces/operations', { limit: 20 }, [version])
  const name = (id: string) => servers.find((s) => s.id === id)?.name ?? id.slice(0, 8)
  // The market's model keys (rtx_4090) in the words the fleet uses (NVIDIA GeForce RTX 4090).
  const model = (key: string | null) =>
    gpuModelName(
      key,
      servers.map((s) => s.gpu_model),
    )
  return (
    <>
      <Section title="Market standing">
        <Async r={standing} label="Loading the market…">
          {({ items }) =>
            items.length === 0 ? (
              <Empty>No listed offer yet: publish one to see where it stands in its market.</Empty>
            ) : (
              <DataTable
                label="Market standing"
                head={
                  <>
                    <th scope="col">Server</th>
                    <th scope="col">Marketplace</th>
                    <th scope="col">Model</th>
                    <th scope="col" class="num">
                      Your price
                    </th>
                    <th scope="col" class="num">
                      Median
                    </th>
                    <th scope="col" class="num">
                      Cheaper / equal / dearer
                    </th>
                    <th scope="col" class="num">
                      Percentile
                    </th>
                  </>
                }
              >
                {items.map((s) => (
                  <tr key={`${s.server_id}-${s.marketplace}`}>
                    <td>{name(s.server_id)}</td>
                    <td>{marketplaceName(s.marketplace)}</td>
                    <td>{model(s.gpu_model)}</td>
                    <td class="num">
                      <Price usd={s.price_gpu_hour} />
                    </td>
                    <td class="num">
                      <Price usd={s.median} />
                    </td>
                    <td class="num">{s.cheaper === null ? '—' : `${s.cheaper} / ${s.equal} / ${s.dearer} of ${s.market_offers}`}</td>
                    <td class="num">{s.percentile === null ? '—' : Math.round(s.percentile)}</td>
                  </tr>
                ))}
              </DataTable>
            )
          }
        </Async>
      </Section>
      <Section title="Supply">
        <Async r={supply} label="Loading the supply…">
          {({ items }) =>
            items.length === 0 ? (
              <Empty>Nothing listed yet.</Empty>
            ) : (
              <>
                <DataTable
                  label="Supply"
                  head={
                    <>
                      <th scope="col">Marketplace</th>
                      <th scope="col">Model</th>
                      <th scope="col" class="num">
                        Your offers
                      </th>
                      <th scope="col" class="num">
                        Your GPUs listed
                      </th>
                      <th scope="col" class="num">
                        Yours for rent now
                      </th>
                      <th scope="col" class="num">
                        Offers for rent now
                      </th>
                      <th scope="col" class="num">
                        GPUs for rent now
                      </th>
                      <th scope="col" class="num">
                        Your share
                      </th>
                    </>
                  }
                >
                  {items.map((s) => (
                    <tr key={`${s.marketplace}-${s.gpu_model}`}>
                      <td>{marketplaceName(s.marketplace)}</td>
                      <td>{model(s.gpu_model)}</td>
                      <td class="num">{s.my_offers}</td>
                      <td class="num">{s.my_gpus}</td>
                      <td class="num">{s.my_gpus_for_rent}</td>
                      <td class="num">{s.market_offers}</td>
                      <td class="num">{s.market_gpus}</td>
                      <td class="num">{s.share_of_gpus === null ? '—' : `${Math.round(s.share_of_gpus * 1000) / 10} %`}</td>
                    </tr>
                  ))}
                </DataTable>
                <p class="muted small">
                  The market columns count what the marketplace's search offers for rent now, yours among them while they have a free GPU. Your GPUs listed
                  count every GPU of your listed machines, rented or not; yours for rent now leave the rented ones out, and your share is of the GPUs for rent
                  now.
                </p>
              </>
            )
          }
        </Async>
      </Section>
      <Section
        title="Calls to the marketplaces"
        actions={
          <button type="button" onClick={ops.reload}>
            Refresh
          </button>
        }
      >
        <PagedTable
          r={ops}
          loading="Loading the calls…"
          empty="gpuhq has not called a marketplace for you yet."
          label="Calls to the marketplaces"
          head={
            <>
              <th scope="col">When</th>
              <th scope="col">Marketplace</th>
              <th scope="col">Operation</th>
              <th scope="col">Outcome</th>
              <th scope="col">Why</th>
            </>
          }
          row={(o) => (
            <tr key={o.id}>
              <td class="nowrap">{dateTime(o.at)}</td>
              <td>{marketplaceName(o.marketplace)}</td>
              <td>
                <code>
                  {o.method} {o.path}
                </code>{' '}
                ({o.operation})
              </td>
              <td>
                <StatusBadge status={o.outcome === 'ok' ? 'succeeded' : o.outcome} /> {o.status ?? ''}
              </td>
              <td>{o.reason ?? ''}</td>
            </tr>
          )}
        />
      </Section>
    </>
  )
}
