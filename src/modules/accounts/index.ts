/** The accounts module's front door: signup, sign-in, password reset and the operator's account tools. */
export { accountsRoutes } from './accounts.routes'
export { collectAuthLeftovers } from './accounts.gc'
export { ADMIN_TICKET_TTL_SECONDS, createAccount, tenantsOverview } from './admin.service'
