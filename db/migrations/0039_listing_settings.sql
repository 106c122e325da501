CREATE TABLE `listing_profile_members` (
	`profile_id` text NOT NULL,
	`server_id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`outcome` text NOT NULL,
	`reason` text,
	`version` integer NOT NULL,
	`applied_at` integer NOT NULL,
	PRIMARY KEY(`profile_id`, `server_id`),
	FOREIGN KEY (`profile_id`) REFERENCES `listing_profiles`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `listing_profiles` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`group_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`name` text NOT NULL,
	`offer` text,
	`end_date_days` integer,
	`idle_job` text,
	`keep_on` integer,
	`version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`applied_at` integer,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`group_id`) REFERENCES `server_groups`(`id`) ON UPDATE no action ON DELETE cascade
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `listing_profiles_group` ON `listing_profiles` (`tenant_id`,`group_id`,`marketplace`);--> statement-breakpoint
ALTER TABLE `marketplace_links` ADD `end_date_days` integer;--> statement-breakpoint
ALTER TABLE `marketplace_links` ADD `end_date_extended_to` integer;--> statement-breakpoint
ALTER TABLE `marketplace_links` ADD `end_date_extended_at` integer;--> statement-breakpoint
ALTER TABLE `marketplace_links` ADD `idle_job` text;