CREATE TABLE `earnings_days` (
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`day` text NOT NULL,
	`accrued_usd_micros` integer NOT NULL,
	`accrued_us` integer NOT NULL,
	`gap_us` integer NOT NULL,
	`samples` integer NOT NULL,
	`platform_usd_micros` integer,
	`by_currency` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `server_id`, `marketplace`, `day`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `earnings_days_tenant_day` ON `earnings_days` (`tenant_id`,`day`);--> statement-breakpoint
CREATE TABLE `earnings_reports` (
	`tenant_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`read_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `marketplace`)
) STRICT;
--> statement-breakpoint
CREATE TABLE `earnings_watermarks` (
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`accrued_until` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `server_id`, `marketplace`)
) STRICT;
