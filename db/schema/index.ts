// One file per feature; drizzle-kit reads them all through this index.
export * from './platform'
