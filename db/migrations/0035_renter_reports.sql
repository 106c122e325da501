CREATE TABLE `renter_reports` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`external_machine_id` text NOT NULL,
	`report_key` text NOT NULL,
	`problem` text,
	`message` text,
	`reported_at` integer,
	`seen_at` integer NOT NULL,
	`alerted` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `renter_reports_key` ON `renter_reports` (`tenant_id`,`marketplace`,`external_machine_id`,`report_key`);--> statement-breakpoint
CREATE INDEX `renter_reports_server` ON `renter_reports` (`tenant_id`,`server_id`,`id`);