import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Small service-wide settings that must survive a restart (e.g. the test clock's offset). */
export const serviceSettings = sqliteTable('service_settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/**
 * Rows written by the test-only probe operation (TEST_CLOCK=true): the crash test and the HTTP
 * benchmark need a real acknowledged write that belongs to no business feature.
 */
export const testProbes = sqliteTable('test_probes', {
  id: text('id').primaryKey(),
  value: text('value').notNull(),
  version: integer('version').notNull(),
  createdAt: integer('created_at').notNull(),
})
