/** The tenants module's front door: the only file other modules import from it. */
export {
  accountStateOf,
  findTenant,
  insertTenant,
  listTenants,
  setAccountState,
  setSubscriptionVersion,
  setTenantPlanCode,
  tenantPlanCodes,
  tenantsInGraceBefore,
  type TenantRow,
} from './tenants.repository'
