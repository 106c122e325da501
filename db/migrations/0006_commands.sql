CREATE TABLE `command_logs` (
	`id` text PRIMARY KEY NOT NULL,
	`command_id` text NOT NULL,
	`text` text NOT NULL,
	`bytes` integer NOT NULL,
	`truncated` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`command_id`) REFERENCES `commands`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `command_timeline` (
	`id` text PRIMARY KEY NOT NULL,
	`command_id` text NOT NULL,
	`at` integer NOT NULL,
	`axis` text NOT NULL,
	`from_state` text,
	`to_state` text NOT NULL,
	`note` text,
	FOREIGN KEY (`command_id`) REFERENCES `commands`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `command_timeline_command` ON `command_timeline` (`command_id`,`id`);--> statement-breakpoint
CREATE TABLE `commands` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`type` text NOT NULL,
	`schema_version` integer NOT NULL,
	`params` text NOT NULL,
	`requires` text NOT NULL,
	`delivery_status` text NOT NULL,
	`execution_status` text NOT NULL,
	`queue_reason` text,
	`progress` integer,
	`result` text,
	`error` text,
	`issued_by_type` text NOT NULL,
	`issued_by_id` text,
	`idempotency_key` text,
	`created_at` integer NOT NULL,
	`accept_by` integer,
	`deadline` integer,
	`sent_at` integer,
	`accepted_at` integer,
	`started_at` integer,
	`finished_at` integer,
	`cancelled_at` integer,
	`cancel_requested_at` integer,
	`send_count` integer NOT NULL,
	`version` integer NOT NULL,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `commands_tenant` ON `commands` (`tenant_id`,`id`);--> statement-breakpoint
CREATE INDEX `commands_server_delivery` ON `commands` (`server_id`,`delivery_status`);--> statement-breakpoint
CREATE INDEX `commands_expiry` ON `commands` (`execution_status`,`deadline`);--> statement-breakpoint
ALTER TABLE `servers` ADD `rental_active` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `servers` ADD `rental_source` text;--> statement-breakpoint
ALTER TABLE `servers` ADD `rental_updated_at` integer;