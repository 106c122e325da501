/**
 * SQL text from Drizzle's SQLite dialect (and the few statements the repositories write by hand
 * for bun:sqlite) rewritten for PostgreSQL, once per distinct text (the caller caches).
 *
 * What differs, and what is done about it:
 * - placeholders: `?` (in order) and `?NNN` (numbered) become `$n`; anything inside a quoted
 *   string, a quoted identifier or a comment is left alone;
 * - `rowid` (SQLite's implicit row id, used to delete in slices) becomes `ctid`;
 * - backquoted identifiers (drizzle-kit's SQLite migrations) become double-quoted;
 * - `INSERT OR IGNORE INTO` becomes `INSERT INTO … ON CONFLICT DO NOTHING`;
 * - the columns of an `on conflict (…)` target lose their table name, which Drizzle's SQLite
 *   dialect writes and PostgreSQL refuses.
 *
 * What needs no rewrite: double-quoted identifiers, `returning`, `on conflict … do update set … =
 * excluded.…`, `limit ? offset ?` (Drizzle's SQLite dialect never emits `limit -1`), `true`/`false`.
 * Functions SQLite has and PostgreSQL names differently (two-argument `min`/`max`, `json_each`,
 * the `percentile_cont(value, p)` aggregate, `sum` of integers staying an integer) are provided by
 * the `gpuhq_compat` schema (db/pg/compat.ts) that precedes pg_catalog on the search path, so the
 * text itself stays as the repositories wrote it.
 */
export function translateSql(text: string): { sql: string; params: number } {
  let out = ''
  let next = 0
  let max = 0
  let ignore = false
  const n = text.length
  let i = 0
  while (i < n) {
    const c = text[i]!
    if (c === "'" || c === '"' || c === '`') {
      let j = i + 1
      while (j < n) {
        if (text[j] === c) {
          if (text[j + 1] === c) {
            j += 2
            continue
          }
          break
        }
        j++
      }
      const quoted = text.slice(i, j + 1)
      out += c === '`' ? `"${quoted.slice(1, -1).replaceAll('"', '""').replaceAll('``', '`')}"` : quoted
      i = j + 1
      continue
    }
    if (c === '-' && text[i + 1] === '-') {
      const j = text.indexOf('\n', i)
      const end = j < 0 ? n : j
      out += text.slice(i, end)
      i = end
      continue
    }
    if (c === '/' && text[i + 1] === '*') {
      const j = text.indexOf('*/', i + 2)
      const end = j < 0 ? n : j + 2
      out += text.slice(i, end)
      i = end
      continue
    }
    if (c === '?') {
      let j = i + 1
      while (j < n && text[j]! >= '0' && text[j]! <= '9') j++
      const index = j > i + 1 ? Number(text.slice(i + 1, j)) : ++next
      if (index > max) max = index
      out += `$${index}`
      i = j
      continue
    }
    if ((c === 'r' || c === 'R') && /^rowid\b/i.test(text.slice(i, i + 6)) && !/[\w$]/.test(text[i - 1] ?? ' ')) {
      out += 'ctid'
      i += 5
      continue
    }
    if ((c === 'i' || c === 'I') && !/[\w$]/.test(text[i - 1] ?? ' ')) {
      const m = /^insert\s+or\s+ignore\s+into\b/i.exec(text.slice(i, i + 40))
      if (m) {
        out += 'INSERT INTO'
        ignore = true
        i += m[0].length
        continue
      }
    }
    out += c
    i++
  }
  if (ignore) out = `${out.replace(/;\s*$/, '')} ON CONFLICT DO NOTHING`
  // Drizzle names the conflict target's columns with their table ("t"."key"); PostgreSQL takes bare names.
  out = out.replace(/\bon conflict \(([^)]*)\)/gi, (clause, target: string) => clause.replace(target, target.replace(/"(?:[^"]|"")+"\./g, '')))
  return { sql: out, params: max }
}
