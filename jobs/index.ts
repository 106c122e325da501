import type { JobDefinition } from '../src/platform/jobs'
import { pruneJobRuns } from '../src/platform/jobs'
import { collectExpiredKeys } from '../src/platform/idempotency'
import { collectDrainedBuckets } from '../src/platform/rate-limit'
import { collectAuthLeftovers } from '../src/modules/accounts'
import { fleetRuntime, refreshAllSnapshots } from '../src/modules/fleet'
import { pruneTelemetry, runRollups } from '../src/modules/telemetry'
import { expireCommands } from '../src/modules/commands'
import { runHourlyCharges } from '../src/modules/billing'
import { reconcileTopups } from '../src/modules/payments'
import { fireScheduled } from '../src/modules/subscription'
import { syncMarketplaces } from '../src/modules/marketplaces'
import { sampleEarnings } from '../src/modules/earnings'
import { suggestPrices } from '../src/modules/strategy'
import { dispatchNotifications, pollChatLinks, sendWeeklyReports, watchTemperatures } from '../src/modules/notifications'
import { evaluateAlerts } from '../src/modules/alerts'
import { evaluateReadiness } from '../src/modules/readiness'
import { pruneLiveEvents } from '../src/modules/live'
import { evaluateWatchdog } from '../src/modules/watchdog'
import { advanceDrains } from '../src/modules/drains'
import { runBulkOperations } from '../src/modules/bulk'
import { applyProfilesToNewMembers } from '../src/modules/listing-profiles'
import { evaluateReconciliation } from '../src/modules/reconciliation'

/**
 * Every scheduled job, as data (docs/operations.md "Jobs" lists them). The names are the ones
 * POST /_test/jobs/{job}/run takes;
 * each feature adds its own here when it lands. Each run calls a verb as the system and is
 * idempotent per period.
 */
export const jobs: readonly JobDefinition[] = [
  {
    name: 'presence.sweep',
    schedule: '*/15 * * * * *',
    leaseSeconds: 60,
    description: 'Moves servers without a heartbeat to suspect after 60 s and offline after 300 s.',
    run: ({ deps, tenants }) => fleetRuntime(deps).sweep(tenants),
  },
  {
    name: 'fleet.snapshot',
    schedule: '*/60 * * * * *',
    leaseSeconds: 120,
    description: "Recomputes every tenant's fleet snapshot (GET /servers, GET /dashboard).",
    run: ({ deps, tenants }) => refreshAllSnapshots(deps, tenants),
  },
  {
    name: 'billing.charge',
    schedule: '*/5 * * * *',
    leaseSeconds: 900,
    description: "Books each hour's charges once it is 1 h 15 min old (catching up after downtime) and freezes accounts whose grace ran out.",
    run: ({ deps, tenants }) => runHourlyCharges(deps, { tenants }),
  },
  {
    name: 'billing.reconcile',
    schedule: '*/10 * * * *',
    leaseSeconds: 600,
    description: 'Re-reads open top-ups from their payment provider, settling or flagging them; expires unpaid invoices.',
    run: ({ deps, period, tenants }) => reconcileTopups(deps, { job: 'billing.reconcile', period }, tenants),
  },
  {
    name: 'subscription.fire',
    schedule: '2 * * * *',
    leaseSeconds: 600,
    description: 'Applies or refuses scheduled plan changes whose day has come, re-reading the rule.',
    run: ({ deps, period, tenants }) => fireScheduled(deps, { job: 'subscription.fire', period }, tenants),
  },
  {
    name: 'commands.expire',
    schedule: '*/15 * * * * *',
    leaseSeconds: 60,
    description: 'Marks undelivered commands past accept_by delivery_failed and unfinished ones past deadline expired; sends what waits.',
    run: ({ deps, tenants }) => expireCommands(deps, tenants),
  },
  {
    name: 'marketplaces.sync',
    schedule: '30 */5 * * * *',
    leaseSeconds: 900,
    description:
      "Reads every connected marketplace account's machines: refreshes link projections, marks vanished machines stale, flags conflicts, records failures and keeps the servers' marketplace rental facts.",
    run: ({ deps, tenants }) => syncMarketplaces(deps, tenants),
  },
  {
    name: 'earnings.sample',
    schedule: '0 */5 * * * *',
    leaseSeconds: 600,
    description:
      "Accrues each link's running deals (price × time since the last sample, split at UTC midnight, gaps past the sync's silence cap reported) and reads the platforms' own daily figures hourly.",
    run: ({ deps, tenants }) => sampleEarnings(deps, tenants),
  },
  {
    name: 'strategy.suggest',
    schedule: '30 */5 * * * *',
    leaseSeconds: 600,
    description:
      'Applies each enabled pricing policy whose cadence has come to the listed offers it targets and keeps one pending suggestion per offer (a changed price supersedes the last one); releases acceptances left half-done by a dead process.',
    run: ({ deps, tenants }) => suggestPrices(deps, tenants),
  },
  {
    name: 'metrics.rollup',
    schedule: '5 * * * * *',
    leaseSeconds: 600,
    description:
      'Rolls raw telemetry into 5-minute and hourly buckets (running buckets too), catching up after downtime; then watches GPU temperatures (notifications).',
    run: async ({ deps, tenants }) => {
      await fleetRuntime(deps).flush()
      return `${await runRollups(deps)}; ${await watchTemperatures(deps, tenants)}`
    },
  },
  {
    name: 'metrics.prune',
    schedule: '11 */6 * * *',
    description: 'Deletes raw samples and rollups past their retention (METRICS_*_RETENTION_*).',
    run: ({ deps }) => pruneTelemetry(deps),
  },
  {
    name: 'notifications.dispatch',
    schedule: '*/30 * * * * *',
    leaseSeconds: 120,
    description:
      "Reads the Telegram bot's updates to link chats, sends due notification deliveries (chat and email, after quiet hours, with retries), then the mail outbox.",
    run: async ({ deps, tenants }) => {
      const chat = await pollChatLinks(deps)
      const notifications = await dispatchNotifications(deps, tenants)
      return `chat: ${chat}; ${notifications} notification deliveries sent; ${await deps.mail.dispatchDue()} mails sent`
    },
  },
  {
    name: 'notifications.weekly',
    schedule: '0 0 8 * * 1',
    leaseSeconds: 600,
    description: "Queues each tenant's weekly report (servers, the week's accrued earnings) as a `weekly` notification, once per week.",
    run: ({ deps, tenants }) => sendWeeklyReports(deps, tenants),
  },
  {
    name: 'alerts.evaluate',
    schedule: '10,40 * * * * *',
    leaseSeconds: 120,
    description:
      'Opens and resolves the incidents that are states: GPU temperatures, failing marketplace accounts, stale links; resolves quiet agent errors and covered balances; links new notifications.',
    run: ({ deps, tenants }) => evaluateAlerts(deps, tenants),
  },
  {
    name: 'readiness.evaluate',
    schedule: '25,55 * * * * *',
    leaseSeconds: 120,
    description:
      "Evaluates every managed server's readiness per marketplace and remembers each item's verdict; an item that passed and now fails on a linked marketplace is a readiness.regressed server event (a notification in `error` and a `readiness` incident react to it), one that passes again readiness.recovered.",
    run: ({ deps, tenants }) => evaluateReadiness(deps, tenants),
  },
  {
    name: 'watchdog.evaluate',
    schedule: '20,50 * * * * *',
    leaseSeconds: 120,
    description:
      "Checks each enabled watchdog rule on the online servers it covers and takes the ladder's next step where the condition still holds after the last step's settle time: notify, restart the container runtime, reboot (within their limits, never during a rental unless the rule allows it), then give up and page.",
    run: async ({ deps, tenants }) => {
      // Utilisation rules read the latest readings: what the session buffers is written first.
      await fleetRuntime(deps).flush()
      return evaluateWatchdog(deps, tenants)
    },
  },
  {
    name: 'drains.advance',
    schedule: '5,35 * * * * *',
    leaseSeconds: 300,
    description:
      'Moves each drain on: to working once no rental runs on its server, to relisting once its commands ended well (failed when one did not), then publishes the kept offers again and cancels the window; takes up a first step a stopped process left.',
    run: ({ deps, tenants }) => advanceDrains(deps, tenants),
  },
  {
    name: 'bulk.run',
    schedule: '*/5 * * * * *',
    leaseSeconds: 120,
    description:
      'Sends the items of bulk publish / withdraw / reprice operations one after the other, paced by each platform\'s limits, at most 10 per tenant per run, resuming from the first item not decided (docs/marketplaces.md "Bulk changes").',
    run: ({ deps, tenants }) => runBulkOperations(deps, tenants),
  },
  {
    name: 'listing-profiles.apply',
    schedule: '40 */10 * * * *',
    leaseSeconds: 900,
    description:
      "Applies each listing profile the owner has applied to the group's servers that have not had it yet (joined since, or skipped for want of a link that now exists), paced by the platforms' limits.",
    run: ({ deps, tenants }) => applyProfilesToNewMembers(deps, tenants),
  },
  {
    name: 'reconciliation.evaluate',
    schedule: '0 35 * * * *',
    leaseSeconds: 900,
    description:
      "Reads each connected account's payout history (marketplace_a's invoices) and wallet balances (marketplace_b), then flags the closed machine-days of the last 30 where the platform paid less than accrual minus commission by more than the owner's threshold: a new flag opens the payout_gap alert and notifies (payment), none left resolves it.",
    run: ({ deps, tenants }) => evaluateReconciliation(deps, tenants),
  },
  {
    name: 'live.prune',
    schedule: '47 * * * * *',
    leaseSeconds: 120,
    description: 'Deletes live events past LIVE_EVENTS_RETENTION_HOURS and past LIVE_EVENTS_MAX_PER_TENANT per tenant, in short slices.',
    run: ({ deps, tenants }) => pruneLiveEvents(deps, tenants),
  },
  {
    name: 'accounts.gc',
    schedule: '23 4 * * *',
    description: 'Deletes expired email codes, tickets, spent captcha tokens and old sign-in failure records.',
    run: ({ deps }) => collectAuthLeftovers(deps),
  },
  {
    name: 'idempotency.gc',
    schedule: '17 * * * *',
    description: 'Deletes Idempotency-Key records older than the retention (24 h by default).',
    run: async ({ deps }) => `removed ${await collectExpiredKeys(deps)} expired idempotency keys`,
  },
  {
    name: 'platform.gc',
    schedule: '41 3 * * *',
    description: 'Deletes drained rate-limit buckets and job-run records older than 7 days (the 15-second jobs write about 17,000 a day).',
    run: async ({ deps }) => `removed ${await collectDrainedBuckets(deps.db, deps.clock)} rate-limit buckets and ${await pruneJobRuns(deps, 7)} job runs`,
  },
]
