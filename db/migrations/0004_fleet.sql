CREATE TABLE `fleet_snapshots` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`generated_at` integer NOT NULL,
	`data_as_of` integer NOT NULL,
	`body` text NOT NULL,
	`dirty` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE TABLE `server_events` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`kind` text NOT NULL,
	`severity` text NOT NULL,
	`message` text NOT NULL,
	`data` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `server_events_server` ON `server_events` (`server_id`,`id`);--> statement-breakpoint
CREATE TABLE `server_groups` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`position` integer NOT NULL,
	`version` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `server_groups_tenant_name` ON `server_groups` (`tenant_id`,`name`);--> statement-breakpoint
CREATE TABLE `server_keep_on` (
	`server_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`tenant_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`server_id`, `marketplace`),
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `server_latest_metrics` (
	`server_id` text NOT NULL,
	`gpu_index` integer NOT NULL,
	`metric` text NOT NULL,
	`value` real,
	`t` integer NOT NULL,
	PRIMARY KEY(`server_id`, `gpu_index`, `metric`),
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
ALTER TABLE `servers` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `servers` ADD `hostname` text;--> statement-breakpoint
ALTER TABLE `servers` ADD `fingerprint` text;--> statement-breakpoint
ALTER TABLE `servers` ADD `public_ip` text;--> statement-breakpoint
ALTER TABLE `servers` ADD `disk_gb` integer;--> statement-breakpoint
ALTER TABLE `servers` ADD `port_range` text;--> statement-breakpoint
ALTER TABLE `servers` ADD `agent_version` text;--> statement-breakpoint
ALTER TABLE `servers` ADD `gpus` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `servers` ADD `gpu_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `servers` ADD `gpu_model` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `servers` ADD `group_id` text REFERENCES server_groups(id);--> statement-breakpoint
ALTER TABLE `servers` ADD `tags` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `servers` ADD `electricity_micros_per_kwh` integer;--> statement-breakpoint
ALTER TABLE `servers` ADD `maintenance_since` integer;--> statement-breakpoint
ALTER TABLE `servers` ADD `maintenance_reason` text;--> statement-breakpoint
ALTER TABLE `servers` ADD `presence` text DEFAULT 'offline' NOT NULL;--> statement-breakpoint
ALTER TABLE `servers` ADD `last_seen_at` integer;--> statement-breakpoint
ALTER TABLE `servers` ADD `last_hello_at` integer;--> statement-breakpoint
ALTER TABLE `servers` ADD `agent_token_hash` text;--> statement-breakpoint
ALTER TABLE `servers` ADD `enrolled_at` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `servers_agent_token` ON `servers` (`agent_token_hash`);--> statement-breakpoint
CREATE INDEX `servers_presence` ON `servers` (`presence`,`last_seen_at`);