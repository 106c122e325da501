import { formatNullableTimestamp, formatTimestamp } from '../../../platform/time'
import type { LinkRow } from '../links/links.repository'

/** The link's `listing` object: the rolling end date and the idle job gpuhq keeps on the machine. */
export function listingView(l: LinkRow) {
  return {
    end_date_days: l.endDateDays ?? null,
    end_date_extended_to: formatNullableTimestamp(l.endDateExtendedTo ?? null),
    end_date_extended_at: formatNullableTimestamp(l.endDateExtendedAt ?? null),
    idle_job: l.idleJob
      ? {
          image: l.idleJob.image,
          args: l.idleJob.args,
          price_gpu_hour: l.idleJob.price_gpu_hour,
          price_inet_up_tb: l.idleJob.price_inet_up_tb,
          price_inet_down_tb: l.idleJob.price_inet_down_tb,
          set_at: formatTimestamp(l.idleJob.set_at),
        }
      : null,
  }
}
