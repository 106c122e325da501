import { dateTime, marketplaceName } from '../lib/format'
import { usePaged } from '../lib/resource'
import type { RenterReport } from '../lib/api-types'
import { Section } from '../ui/layout'
import { PagedTable } from '../ui/states'

/**
 * What renters reported about the server's marketplace machine (docs/marketplaces.md "Renter
 * reports"), as the sync read them, newest first. Only marketplace_a has reports.
 */
export function RenterReports({ serverId }: { serverId: string }) {
  const reports = usePaged<RenterReport>(`/servers/${serverId}/renter-reports`, { limit: 20 }, [serverId])
  return (
    <Section
      title="Renter reports"
      actions={
        <button type="button" onClick={reports.reload}>
          Refresh
        </button>
      }
    >
      <PagedTable
        r={reports}
        loading="Loading the renter reports…"
        empty="No renter has reported this machine. (Vast's reports are read at each sync; Clore has none.)"
        label="Renter reports"
        head={
          <>
            <th scope="col">Reported</th>
            <th scope="col">Marketplace</th>
            <th scope="col">Problem</th>
            <th scope="col">Message</th>
          </>
        }
        row={(r) => (
          <tr key={r.id} data-report={r.id}>
            <td class="nowrap">{dateTime(r.reported_at ?? r.seen_at)}</td>
            <td>
              {marketplaceName(r.marketplace)} <span class="muted">#{r.external_machine_id}</span>
            </td>
            <td>{r.problem ?? '(none given)'}</td>
            <td>{r.message ?? ''}</td>
          </tr>
        )}
      />
    </Section>
  )
}
