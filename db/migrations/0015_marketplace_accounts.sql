CREATE TABLE `marketplace_accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`status` text NOT NULL,
	`key_box` text NOT NULL,
	`key_hash` text NOT NULL,
	`owner` text NOT NULL,
	`holding_micros` integer,
	`connected_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`last_success_at` integer,
	`last_failure_at` integer,
	`last_failure` text,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `marketplace_accounts_tenant` ON `marketplace_accounts` (`tenant_id`,`marketplace`);--> statement-breakpoint
CREATE TABLE `marketplace_operations` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`server_id` text,
	`operation` text NOT NULL,
	`method` text NOT NULL,
	`path` text NOT NULL,
	`status` integer,
	`outcome` text NOT NULL,
	`latency_ms` integer NOT NULL,
	`actor_kind` text NOT NULL,
	`actor_id` text,
	`started_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `marketplace_operations_tenant` ON `marketplace_operations` (`tenant_id`,`id`);--> statement-breakpoint
CREATE INDEX `marketplace_operations_server` ON `marketplace_operations` (`tenant_id`,`server_id`,`id`);