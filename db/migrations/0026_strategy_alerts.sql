CREATE TABLE `strategy_policies` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`marketplace` text NOT NULL,
	`target` text NOT NULL,
	`min_margin_percent` text NOT NULL,
	`target_percentile` integer NOT NULL,
	`ceiling_micros` integer,
	`rounding_step_micros` integer NOT NULL,
	`cadence_minutes` integer NOT NULL,
	`raise_while_rented` text NOT NULL,
	`coin` text,
	`enabled` integer NOT NULL,
	`version` integer NOT NULL,
	`last_run_at` integer,
	`created_by` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `strategy_policies_tenant` ON `strategy_policies` (`tenant_id`,`id`);--> statement-breakpoint
CREATE TABLE `strategy_suggestions` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`policy_id` text NOT NULL,
	`server_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`state` text NOT NULL,
	`evaluation` text NOT NULL,
	`offer` text NOT NULL,
	`current_micros` integer,
	`suggested_micros` integer NOT NULL,
	`created_at` integer NOT NULL,
	`claimed_at` integer,
	`decided_at` integer,
	`decided_by` text,
	`dismiss_reason` text,
	`outcome` text,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `strategy_suggestions_tenant` ON `strategy_suggestions` (`tenant_id`,`id`);--> statement-breakpoint
CREATE INDEX `strategy_suggestions_offer` ON `strategy_suggestions` (`tenant_id`,`server_id`,`marketplace`,`state`);--> statement-breakpoint
CREATE TABLE `alert_incidents` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`kind` text NOT NULL,
	`cause_key` text NOT NULL,
	`severity` text NOT NULL,
	`server_id` text,
	`marketplace` text,
	`title` text NOT NULL,
	`detail` text NOT NULL,
	`state` text NOT NULL,
	`opened_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	`occurrences` integer NOT NULL,
	`acknowledged_at` integer,
	`acknowledged_by` text,
	`resolved_at` integer,
	`resolved_by` text,
	`resolution` text,
	`notification_ids` text NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `alert_incidents_tenant` ON `alert_incidents` (`tenant_id`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `alert_incidents_open_cause` ON `alert_incidents` (`tenant_id`,`cause_key`) WHERE state <> 'resolved';