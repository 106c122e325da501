import type { JSX } from 'preact'
import { AddServer } from './add-server'
import { AiPage } from './ai'
import { AlertsPage } from './alerts'
import { BillingPage } from './billing'
import { BulkOperationPage, BulkPage } from './bulk'
import { PlanPage } from './plan'
import { ReportsPage } from './reports'
import { ReconciliationPage } from './reconciliation'
import { SettingsPage } from './settings'
import { CommandPage } from './command'
import { Commands } from './commands'
import { EarningsPage } from './earnings'
import { Fleet } from './fleet'
import { MarketplacesPage } from './marketplaces'
import { NotificationsPage } from './notifications'
import { ServerPage } from './server'
import { StrategyPage } from './strategy'
import { TokensPage } from './tokens'

/** The signed-in pages by route (lib/router.ts `match`): the first pattern that fits wins. */
// biome-ignore lint/suspicious/noExplicitAny: each page takes its own route parameters
export const ROUTES: [string, (params: any) => JSX.Element][] = [
  ['/', Fleet],
  ['/add-server', AddServer],
  ['/servers/:id', ServerPage],
  ['/commands', Commands],
  ['/commands/:id', CommandPage],
  ['/billing', BillingPage],
  ['/billing/plan', PlanPage],
  ['/marketplaces', MarketplacesPage],
  ['/marketplaces/bulk', BulkPage],
  ['/marketplaces/bulk/:id', BulkOperationPage],
  ['/earnings', EarningsPage],
  ['/reconciliation', ReconciliationPage],
  ['/alerts', AlertsPage],
  ['/strategy', StrategyPage],
  ['/notifications', NotificationsPage],
  ['/tokens', TokensPage],
  ['/ai', AiPage],
  ['/reports', ReportsPage],
  ['/settings', SettingsPage],
]
