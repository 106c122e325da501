CREATE TABLE `bulk_items` (
	`id` text PRIMARY KEY NOT NULL,
	`operation_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`position` integer NOT NULL,
	`server_id` text NOT NULL,
	`server_name` text NOT NULL,
	`external_machine_id` text,
	`state` text NOT NULL,
	`before` text,
	`after` text,
	`reason` text,
	`attempts` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`operation_id`) REFERENCES `bulk_operations`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `bulk_items_position` ON `bulk_items` (`operation_id`,`position`);--> statement-breakpoint
CREATE INDEX `bulk_items_tenant` ON `bulk_items` (`tenant_id`,`operation_id`);--> statement-breakpoint
CREATE INDEX `bulk_items_state` ON `bulk_items` (`state`,`tenant_id`);--> statement-breakpoint
CREATE TABLE `bulk_operations` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`action` text NOT NULL,
	`change` text NOT NULL,
	`selection` text NOT NULL,
	`state` text NOT NULL,
	`actor_kind` text NOT NULL,
	`actor_id` text,
	`created_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `bulk_operations_tenant` ON `bulk_operations` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `bulk_operations_state` ON `bulk_operations` (`state`,`created_at`);