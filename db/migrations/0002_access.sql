CREATE TABLE `access_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`name` text NOT NULL,
	`display_prefix` text NOT NULL,
	`token_hash` text NOT NULL,
	`scopes` text NOT NULL,
	`server_allowlist` text,
	`expires_at` integer,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `access_tokens_hash` ON `access_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `access_tokens_tenant` ON `access_tokens` (`tenant_id`,`id`);--> statement-breakpoint
CREATE TABLE `audit_log` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`actor_kind` text NOT NULL,
	`actor_id` text,
	`operation` text NOT NULL,
	`target_kind` text,
	`target_id` text,
	`ip` text,
	`user_agent` text,
	`outcome` text NOT NULL,
	`status` integer,
	`request_id` text,
	`created_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE INDEX `audit_log_tenant` ON `audit_log` (`tenant_id`,`id`);--> statement-breakpoint
CREATE TABLE `init_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`created_by` text NOT NULL,
	`token_hash` text NOT NULL,
	`server_id` text,
	`expected_fingerprint` text,
	`purpose` text,
	`expires_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`claimed_at` integer,
	`claimed_server_id` text,
	`revoked_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `init_tokens_hash` ON `init_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `init_tokens_tenant` ON `init_tokens` (`tenant_id`);--> statement-breakpoint
CREATE TABLE `plans` (
	`code` text PRIMARY KEY NOT NULL,
	`label` text NOT NULL,
	`price_micros_per_server_month` integer,
	`servers_max` integer,
	`features` text NOT NULL,
	`upgrade_effective` text NOT NULL,
	`downgrade_effective` text NOT NULL,
	`position` integer NOT NULL,
	`updated_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE TABLE `servers` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL,
	`decommissioned_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `servers_tenant` ON `servers` (`tenant_id`);