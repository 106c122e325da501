/**
 * The wire shapes the console reads and sends, taken from the API's own TypeBox models: type-only
 * imports (erased from the bundle; the-console-speaks-http-only in .dependency-cruiser.cjs allows
 * nothing else) and `Static<typeof Model>`. A field renamed or retyped in a model fails
 * `scripts/check web-types` wherever the console reads it (scripts/check-rules plants one).
 * Names here are the console's; a shape the API does not export whole is reached through the
 * answer that carries it (an item of a page, a field of a detail).
 */
import type { Static } from '@sinclair/typebox'
import type * as Accounts from '../../src/modules/accounts/accounts.model'
import type * as Alerts from '../../src/modules/alerts/alerts.model'
import type * as Billing_ from '../../src/modules/billing/billing.model'
import type * as Commands from '../../src/modules/commands/commands.model'
import type * as Drains from '../../src/modules/drains/drains.model'
import type * as Costs from '../../src/modules/costs/costs.model'
import type * as EarningsM from '../../src/modules/earnings/earnings.model'
import type * as Fleet from '../../src/modules/fleet/servers.model'
import type * as Groups from '../../src/modules/groups/groups.model'
import type * as ListingProfiles from '../../src/modules/listing-profiles/listing-profiles.model'
import type * as Candidates from '../../src/modules/marketplaces/links/candidates.model'
import type * as Market from '../../src/modules/marketplaces/market/market.model'
import type * as Marketplaces from '../../src/modules/marketplaces/marketplaces.model'
import type * as RenterReports from '../../src/modules/marketplaces/renter-reports/renter-reports.model'
import type * as Mcp from '../../src/modules/mcp/mcp.model'
import type * as Notifications from '../../src/modules/notifications/notifications.model'
import type * as Payments from '../../src/modules/payments/payments.model'
import type * as Plans from '../../src/modules/plans/plans.model'
import type * as Readiness from '../../src/modules/readiness/readiness.model'
import type * as Reports from '../../src/modules/reports/reports.model'
import type * as Strategy from '../../src/modules/strategy/strategy.model'
import type * as SubscriptionM from '../../src/modules/subscription/subscription.model'
import type * as Metrics from '../../src/modules/telemetry/metrics.model'
import type * as Tokens from '../../src/modules/tokens/tokens.model'
import type * as Users from '../../src/modules/users/users.model'
import type * as Watchdog from '../../src/modules/watchdog/watchdog.model'
import type * as Bulk from '../../src/modules/bulk/bulk.model'
import type * as ReconciliationM from '../../src/modules/reconciliation/reconciliation.model'

/** An item of a paged answer ({ items, next_cursor }) or of a list ({ items }). */
type ItemOf<T extends { items: unknown[] }> = T['items'][number]

type ServerList = Static<typeof Fleet.ServerList>
/** The envelope of a cached fleet snapshot (GET /servers, GET /dashboard). */
export type Snapshot = Pick<ServerList, 'generated_at' | 'data_as_of' | 'version' | 'stale' | 'stale_reason'>
/** One row of GET /servers. */
export type ServerRow = ServerList['items'][number]
export type Presence = ServerRow['presence']
/** GET /servers/{id}. */
export type ServerDetail = Static<typeof Fleet.ServerDetail>
/** The 7-day margin of one server (ServerDetail.margin). */
export type ServerMargin = NonNullable<ServerDetail['margin']>
/** The figures of a margin, as every margin answer carries them (GET /reports/margin's fleet, servers and periods). */
export type Margin = Static<typeof Costs.MarginReport>['fleet']
export type Dashboard = Static<typeof Fleet.Dashboard>
export type ServerEvent = Static<typeof Fleet.ServerEventPage>['items'][number]

export type Group = Static<typeof Groups.Group>
/** A watchdog rule with its ladders and recent steps (GET /watchdog/rules). */
export type WatchdogRule = Static<typeof Watchdog.Rule>
export type WatchdogRulePatchBody = Static<typeof Watchdog.RulePatch>
/** Bulk publish / withdraw / reprice (docs/marketplaces.md "Bulk changes"): the body, the preview, the operation. */
export type BulkBody = Static<typeof Bulk.BulkBody>
export type BulkPreview = Static<typeof Bulk.BulkPreview>
export type BulkOperation = Static<typeof Bulk.BulkOperation>
export type BulkOperationSummary = ItemOf<Static<typeof Bulk.BulkOperationPage>>

export type Command = Static<typeof Commands.Command>
export type CommandLog = Static<typeof Commands.CommandLog>
export type TimelineStep = Static<typeof Commands.TimelinePage>['items'][number]
/** An item of GET /commands/catalogue; params is a JSON Schema the console reads as JsonSchema. */
export type CatalogueItem = Omit<Static<typeof Commands.Catalogue>['items'][number], 'params'> & { params: JsonSchema }

/** The part of JSON Schema the command form reads from a catalogue item's params (not an API type). */
export type JsonSchema = {
  type?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  anyOf?: JsonSchema[]
  minimum?: number
  maximum?: number
  pattern?: string
  description?: string
}

export type Link = Static<typeof Marketplaces.Link>
export type RenterReport = ItemOf<Static<typeof RenterReports.RenterReportPage>>
export type OfferAnswer = Static<typeof Marketplaces.OfferAnswer>

type Capability = (typeof Plans.BASE_CAPABILITIES)[number] | (typeof Plans.EXTRA_CAPABILITIES)[number]
/**
 * A plan of GET /plans. The model builds its capability flags from the capability lists with
 * Object.fromEntries, which TypeBox types as no field at all: the flags are named here from the
 * same lists, so a capability renamed there is renamed here.
 */
export type PlanInfo = Static<typeof Plans.Plan> & { capabilities: Record<Capability, boolean> }
export type Billing = Static<typeof Billing_.Billing>
export type LedgerEntry = Static<typeof Billing_.LedgerEntry>
export type ChargeDay = Static<typeof Billing_.ChargeDay>
export type Topup = Static<typeof Payments.Topup>
export type PaymentMethod = Static<typeof Payments.PaymentMethods>['items'][number]
export type PlanChange = Static<typeof SubscriptionM.Change>
export type Subscription = Omit<Static<typeof SubscriptionM.Subscription>, 'plan'> & { plan: PlanInfo | null }
export type Quote = Static<typeof SubscriptionM.Quote>

export type AuthConfig = Static<typeof Accounts.AuthConfig>
export type CodeSent = Static<typeof Accounts.CodeSent>
export type Ticket = Static<typeof Accounts.Ticket>
export type Me = Static<typeof Users.Me>

export type Incident = Static<typeof Alerts.Incident>

export type CostBasis = Static<typeof Costs.CostBasis>
export type CostBasisPatch = Static<typeof Costs.CostBasisPatch>
/** GET /marketplaces/earnings. */
export type MarketplaceEarnings = Static<typeof EarningsM.Earnings>

export type Standing = ItemOf<Static<typeof Market.Standing>>
export type Supply = ItemOf<Static<typeof Market.Supply>>
export type Operation = ItemOf<Static<typeof Marketplaces.OperationPage>>
export type Connection = Static<typeof Marketplaces.Connection>
export type Candidate = Static<typeof Candidates.CandidateList>['candidates'][number]
export type OfferBody = Static<typeof Marketplaces.OfferBody>

export type McpAccess = Static<typeof Mcp.AccessAnswer>

export type NotificationSettings = Static<typeof Notifications.Settings>
export type NotificationItem = ItemOf<Static<typeof Notifications.HistoryPage>>
export type ChatLink = Static<typeof Notifications.ChatLinkAnswer>

export type UtilisationReport = Static<typeof Reports.UtilisationReport>
export type EarningsReport = Static<typeof Reports.EarningsReport>
export type SpendReport = Static<typeof Reports.SpendReport>
export type MarginReport = Static<typeof Reports.MarginReport>

export type MetricsSnapshot = Static<typeof Metrics.MetricsSnapshot>

export type Policy = Static<typeof Strategy.Policy>
export type Suggestion = Static<typeof Strategy.Suggestion>
export type StrategyPreview = Static<typeof Strategy.PreviewAnswer>

export type Pat = ItemOf<Static<typeof Tokens.PatPage>>
export type PatCreated = Static<typeof Tokens.PatCreated>
export type InitToken = Static<typeof Tokens.InitCreated>

// Request bodies, as the API validates them: a field the console sends that the model does not
// take, or sends as another type, fails the typecheck here before it fails as a 422.
export type SignInBody = Static<typeof Accounts.SignIn>
export type SignupStartBody = Static<typeof Accounts.SignupStart>
export type ResetStartBody = Static<typeof Accounts.ResetStart>
export type CodeCheckBody = Static<typeof Accounts.CodeCheck>
export type SetPasswordBody = Static<typeof Accounts.SetPassword>
export type MePatchBody = Static<typeof Users.MePatch>
export type ResolveBody = Static<typeof Alerts.ResolveBody>
export type CommandCreateBody = Static<typeof Commands.CommandCreate>
export type ServerPatchBody = Static<typeof Fleet.ServerPatch>
export type ServerMaintenanceBody = Static<typeof Fleet.MaintenanceBody>
export type GroupCreateBody = Static<typeof Groups.GroupCreate>
export type GroupPatchBody = Static<typeof Groups.GroupPatch>
export type ConnectBody = Static<typeof Marketplaces.ConnectBody>
export type LinkCreateBody = Static<typeof Marketplaces.LinkCreate>
export type LinkMaintenanceBody = Static<typeof Marketplaces.MaintenanceBody>
export type McpAccessBody = Static<typeof Mcp.AccessBody>
export type NotificationSettingsPatch = Static<typeof Notifications.SettingsPatch>
export type EmailConnectBody = Static<typeof Notifications.EmailConnectBody>
export type TopupCreateBody = Static<typeof Payments.TopupCreate>
export type PolicyCreateBody = Static<typeof Strategy.PolicyCreate>
export type DismissBody = Static<typeof Strategy.DismissBody>
export type ChangeOrderBody = Static<typeof SubscriptionM.ChangeOrder>
export type PatCreateBody = Static<typeof Tokens.PatCreate>
export type InitCreateBody = Static<typeof Tokens.InitCreate>

/** A drain (docs/marketplaces.md "Drain"): GET /drains/{id}, an item of GET /drains. */
export type Drain = Static<typeof Drains.Drain>
export type DrainCreateBody = Static<typeof Drains.DrainCreate>

/** GET /readiness (docs/readiness.md). */
export type FleetReadiness = Static<typeof Readiness.FleetReadiness>
/** One server of GET /readiness. */
export type ServerReadinessSummary = FleetReadiness['servers'][number]
/** GET /servers/{id}/readiness. */
export type ServerReadiness = Static<typeof Readiness.ServerReadiness>

/** A group's listing profile (GET /listing-profiles) and what applying it answers. */
export type ListingProfile = Static<typeof ListingProfiles.Profile>
export type ListingProfileCreateBody = Static<typeof ListingProfiles.ProfileCreate>
export type ListingProfileApply = Static<typeof ListingProfiles.ApplyAnswer>
/** Payouts reconciled (GET /reconciliation): rows per day and machine with totals, payouts and wallets. */
export type ReconciliationAnswer = Static<typeof ReconciliationM.Reconciliation>
/** The payout gap threshold (GET/PUT /reconciliation/settings). */
export type ReconciliationSettings = Static<typeof ReconciliationM.Settings>
export type ReconciliationSettingsBody = Static<typeof ReconciliationM.SettingsPut>
