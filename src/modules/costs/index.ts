/** The costs module's front door: the owner's cost basis (GET/PUT /billing/cost-basis) and the margin the reports module serves. */
export { costsRoutes } from './costs.routes'
export { MarginReport } from './costs.model'
export { marginReport, serverMargin } from './margin.service'
export { gpuHourCosts } from './floor.service'
// What the earnings reconciliation applies as the platform's cut (the root hands it to earnings).
export { platformCuts } from './costs.service'
