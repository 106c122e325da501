CREATE TABLE `chat_link_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `telegram_state` (
	`id` text PRIMARY KEY NOT NULL,
	`update_offset` integer NOT NULL
) STRICT;
