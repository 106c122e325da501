-- The snapshot body moves behind the small columns: SQLite reads a row's columns in order, and a
-- body of more than a page lives in overflow pages, so reading `dirty` after it walked that whole
-- chain on every GET /servers (the head read that decides whether the stored body is still good).
-- The table is a cache the fleet.snapshot job and the next read rebuild, but its rows are kept.
CREATE TABLE `__new_fleet_snapshots` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`generated_at` integer NOT NULL,
	`data_as_of` integer NOT NULL,
	`dirty` integer NOT NULL,
	`body` text NOT NULL
) STRICT;
--> statement-breakpoint
INSERT INTO `__new_fleet_snapshots` (`tenant_id`, `generated_at`, `data_as_of`, `dirty`, `body`)
	SELECT `tenant_id`, `generated_at`, `data_as_of`, `dirty`, `body` FROM `fleet_snapshots`;
--> statement-breakpoint
DROP TABLE `fleet_snapshots`;
--> statement-breakpoint
ALTER TABLE `__new_fleet_snapshots` RENAME TO `fleet_snapshots`;
