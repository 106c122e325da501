/** The bulk module's front door (docs/marketplaces.md "Bulk changes"): its routes and the bulk.run job. */
export { bulkRoutes } from './bulk.routes'
export { runBulkOperations } from './run.service'
