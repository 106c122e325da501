CREATE TABLE `watchdog_rules` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`preset` text,
	`enabled` integer NOT NULL,
	`enabled_at` integer,
	`server_id` text,
	`group_id` text,
	`condition` text NOT NULL,
	`steps` text NOT NULL,
	`allow_during_rental` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`version` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `watchdog_rules_tenant` ON `watchdog_rules` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `watchdog_rules_preset` ON `watchdog_rules` (`tenant_id`,`preset`);--> statement-breakpoint
CREATE TABLE `watchdog_signals` (
	`server_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`value` integer,
	`at` integer NOT NULL,
	PRIMARY KEY(`server_id`, `kind`, `key`),
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `watchdog_states` (
	`rule_id` text NOT NULL,
	`server_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`status` text NOT NULL,
	`step_index` integer NOT NULL,
	`since` integer,
	`last_step_at` integer,
	`reference_at` integer NOT NULL,
	`hold_reason` text,
	`notified` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`rule_id`, `server_id`),
	FOREIGN KEY (`rule_id`) REFERENCES `watchdog_rules`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `watchdog_states_tenant` ON `watchdog_states` (`tenant_id`);--> statement-breakpoint
CREATE TABLE `watchdog_steps` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`rule_id` text NOT NULL,
	`server_id` text NOT NULL,
	`action` text NOT NULL,
	`outcome` text NOT NULL,
	`command_id` text,
	`note` text,
	`at` integer NOT NULL,
	FOREIGN KEY (`rule_id`) REFERENCES `watchdog_rules`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `watchdog_steps_rule` ON `watchdog_steps` (`rule_id`,`server_id`,`at`);