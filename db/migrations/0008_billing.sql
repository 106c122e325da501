CREATE TABLE `balances` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`balance_micros` integer NOT NULL,
	`last_seq` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `billing_state` (
	`key` text PRIMARY KEY NOT NULL,
	`charged_until` integer NOT NULL,
	`updated_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE TABLE `charge_calculations` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`charge_hour` integer NOT NULL,
	`plan_code` text NOT NULL,
	`price_micros_per_server_month` integer NOT NULL,
	`days_in_month` integer NOT NULL,
	`servers` integer NOT NULL,
	`server_ids` text NOT NULL,
	`amount_micros` integer NOT NULL,
	`created_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `charge_calculations_tenant_hour` ON `charge_calculations` (`tenant_id`,`charge_hour`);--> statement-breakpoint
CREATE TABLE `ledger_entries` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`seq` integer NOT NULL,
	`kind` text NOT NULL,
	`amount_micros` integer NOT NULL,
	`balance_after_micros` integer NOT NULL,
	`occurred_at` integer NOT NULL,
	`charge_day` text,
	`charge_hour` integer,
	`detail` text NOT NULL,
	`calculation_id` text,
	`payment_ref` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_tenant_seq` ON `ledger_entries` (`tenant_id`,`seq`);--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_one_charge_per_hour` ON `ledger_entries` (`tenant_id`,`charge_hour`) WHERE kind = 'charge';--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_one_credit_per_payment` ON `ledger_entries` (`payment_ref`) WHERE payment_ref IS NOT NULL;--> statement-breakpoint
CREATE INDEX `ledger_tenant_occurred` ON `ledger_entries` (`tenant_id`,`occurred_at`,`id`);--> statement-breakpoint
ALTER TABLE `tenants` ADD `grace_since` integer;--> statement-breakpoint
ALTER TABLE `tenants` ADD `frozen_at` integer;