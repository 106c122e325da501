-- Plan history moves from day-grained plan_periods to plan_assignments (effective-from instants, in
-- microseconds): each period becomes an assignment from the start of its UTC day; the "since the
-- beginning of time" period ('0000-01-01') starts at 0. plan_periods is read by nothing after this.
INSERT OR IGNORE INTO `plan_assignments` (`tenant_id`, `effective_from`, `plan_code`, `created_at`)
SELECT `tenant_id`,
       CASE WHEN `effective_day` = '0000-01-01' THEN 0 ELSE CAST(strftime('%s', `effective_day`) AS INTEGER) * 1000000 END,
       `plan_code`,
       `created_at`
FROM `plan_periods`;
