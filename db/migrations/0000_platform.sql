CREATE TABLE `idempotency_keys` (
	`scope` text NOT NULL,
	`operation` text NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`state` text NOT NULL,
	`locked_until` integer NOT NULL,
	`response_status` integer,
	`response_box` blob,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`scope`, `operation`, `key`)
) STRICT;
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_at` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE TABLE `job_leases` (
	`job` text PRIMARY KEY NOT NULL,
	`holder` text NOT NULL,
	`leased_until` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE TABLE `job_runs` (
	`job` text NOT NULL,
	`period` text NOT NULL,
	`holder` text NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`outcome` text NOT NULL,
	`detail` text,
	PRIMARY KEY(`job`, `period`)
) STRICT;
--> statement-breakpoint
CREATE TABLE `rate_limits` (
	`bucket` text PRIMARY KEY NOT NULL,
	`tat` integer NOT NULL,
	`expires_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE INDEX `rate_limits_expires_at` ON `rate_limits` (`expires_at`);--> statement-breakpoint
CREATE TABLE `service_settings` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE TABLE `test_probes` (
	`id` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`version` integer NOT NULL,
	`created_at` integer NOT NULL
) STRICT;
