/** The tenants module's front door: the only file other modules import from it. */
export { findTenant, insertTenant, listTenants, type TenantRow } from './tenants.repository'
