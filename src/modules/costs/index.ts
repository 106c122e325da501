/** The costs module's front door: the owner's cost basis (GET/PUT /billing/cost-basis). */
export { costsRoutes } from './costs.routes'
export { serverMargin } from './margin.service'
export { costsPerGpuHour } from './floor.service'
