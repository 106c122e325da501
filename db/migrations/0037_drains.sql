CREATE TABLE `drains` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`live_server_id` text,
	`group_id` text,
	`state` text NOT NULL,
	`reason` text,
	`maintenance_window` text NOT NULL,
	`links` text NOT NULL,
	`work` text NOT NULL,
	`command_ids` text NOT NULL,
	`failure` text,
	`failed_step` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	`version` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `drains_tenant` ON `drains` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `drains_server` ON `drains` (`server_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `drains_live_server` ON `drains` (`live_server_id`);