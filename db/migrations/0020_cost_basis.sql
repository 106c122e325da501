CREATE TABLE `cost_bases` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`electricity_micros_per_kwh` integer,
	`operational_micros_per_month` integer,
	`marketplaces` text NOT NULL,
	`version` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
