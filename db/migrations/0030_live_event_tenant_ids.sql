CREATE TABLE `live_event_sequences` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`last_seq` integer NOT NULL
) STRICT;
--> statement-breakpoint
DROP INDEX `live_events_tenant`;--> statement-breakpoint
ALTER TABLE `live_events` ADD `seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `live_events_tenant_seq` ON `live_events` (`tenant_id`,`seq`);