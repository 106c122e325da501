// One file per feature; drizzle-kit reads them all through this index.
export * from './platform'
export * from './accounts'
export * from './mail'
export * from './fleet'
export * from './access'
export * from './telemetry'
export * from './commands'
export * from './billing'
