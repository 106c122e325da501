CREATE TABLE `platform_payouts` (
	`tenant_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`external_id` text NOT NULL,
	`type` text NOT NULL,
	`day` text NOT NULL,
	`start_at` integer NOT NULL,
	`end_at` integer,
	`amount_usd_micros` integer NOT NULL,
	`description` text NOT NULL,
	`observed_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `marketplace`, `external_id`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `platform_payouts_tenant_day` ON `platform_payouts` (`tenant_id`,`day`);--> statement-breakpoint
CREATE TABLE `reconciliation_flags` (
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`day` text NOT NULL,
	`gap_usd_micros` integer NOT NULL,
	`flagged_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `server_id`, `marketplace`, `day`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `reconciliation_settings` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`gap_threshold_usd_micros` integer NOT NULL,
	`version` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `wallet_balances` (
	`tenant_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`currency` text NOT NULL,
	`day` text NOT NULL,
	`balance` text NOT NULL,
	`usd_micros` integer,
	`observed_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `marketplace`, `currency`, `day`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
