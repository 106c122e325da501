CREATE TABLE `marketplace_links` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`account_id` text NOT NULL,
	`external_machine_id` text NOT NULL,
	`bind_mode` text NOT NULL,
	`state` text NOT NULL,
	`linked_at` integer NOT NULL,
	`last_seen_at` integer,
	`remote` text NOT NULL,
	`marketplace_b` text,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`account_id`) REFERENCES `marketplace_accounts`(`id`) ON UPDATE no action ON DELETE cascade
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `marketplace_links_server` ON `marketplace_links` (`tenant_id`,`server_id`,`marketplace`);--> statement-breakpoint
CREATE INDEX `marketplace_links_machine` ON `marketplace_links` (`tenant_id`,`marketplace`,`external_machine_id`);