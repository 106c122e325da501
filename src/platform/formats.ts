// The openapi plugin's module code registers TypeBox string formats backed by zod, building a new
// zod schema on every check (uuid, email, date among them): imported first, so what follows wins.
import '@elysiajs/openapi'
import { FormatRegistry } from '@sinclair/typebox'

/**
 * The string formats our schemas use, as regular expressions compiled once. The rules are zod 4's,
 * the ones the plugin registered (so nothing accepted or refused changes); the plugin's versions
 * cost a schema construction per value, a fifth of the CPU time of a 50-row GET /servers.
 */
const UUID =
  /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$/
const EMAIL = /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/
const DATE =
  /^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))$/

FormatRegistry.Set('uuid', (v) => UUID.test(v))
FormatRegistry.Set('email', (v) => EMAIL.test(v))
FormatRegistry.Set('date', (v) => DATE.test(v))
