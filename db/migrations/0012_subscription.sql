CREATE TABLE `notification_events` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`category` text NOT NULL,
	`kind` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL,
	`delivered_at` integer
) STRICT;
--> statement-breakpoint
CREATE INDEX `notification_events_tenant` ON `notification_events` (`tenant_id`,`id`);--> statement-breakpoint
CREATE TABLE `plan_periods` (
	`tenant_id` text NOT NULL,
	`effective_day` text NOT NULL,
	`plan_code` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `effective_day`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `subscription_changes` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`from_plan` text NOT NULL,
	`target_plan` text NOT NULL,
	`direction` text NOT NULL,
	`status` text NOT NULL,
	`refusal_reason` text,
	`effective_at` integer NOT NULL,
	`billing_effective_day` text NOT NULL,
	`required_reserve_micros` integer NOT NULL,
	`topup_id` text,
	`requested_at` integer NOT NULL,
	`applied_at` integer,
	`cancelled_at` integer,
	`refused_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `subscription_changes_tenant` ON `subscription_changes` (`tenant_id`,`status`);--> statement-breakpoint
CREATE INDEX `subscription_changes_due` ON `subscription_changes` (`status`,`effective_at`);--> statement-breakpoint
ALTER TABLE `tenants` ADD `subscription_version` integer DEFAULT 1 NOT NULL;