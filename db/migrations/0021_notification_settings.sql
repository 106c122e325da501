CREATE TABLE `notification_channels` (
	`tenant_id` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`destination` text,
	`verified_at` integer,
	`disabled_reason` text,
	`pending_address` text,
	`pending_code_hash` text,
	`pending_expires_at` integer,
	`pending_attempts` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `kind`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `notification_settings` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`rules` text NOT NULL,
	`quiet_enabled` integer NOT NULL,
	`quiet_from` text NOT NULL,
	`quiet_to` text NOT NULL,
	`version` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
