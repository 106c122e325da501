CREATE TABLE `live_event_horizons` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`pruned_through` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE TABLE `live_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`server_id` text,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE INDEX `live_events_tenant` ON `live_events` (`tenant_id`,`id`);--> statement-breakpoint
CREATE INDEX `live_events_created` ON `live_events` (`created_at`);