CREATE TABLE `report_gpu_days` (
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`metric` text NOT NULL,
	`day` integer NOT NULL,
	`sum` real NOT NULL,
	`buckets` integer NOT NULL,
	`gpu_hours` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `server_id`, `metric`, `day`)
) STRICT;
--> statement-breakpoint
CREATE TABLE `report_gpu_spans` (
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`metric` text NOT NULL,
	`from_day` integer NOT NULL,
	`until_day` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `server_id`, `metric`)
) STRICT;
