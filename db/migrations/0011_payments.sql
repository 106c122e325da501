CREATE TABLE `payment_notifications` (
	`id` text PRIMARY KEY NOT NULL,
	`provider` text NOT NULL,
	`topup_id` text,
	`payment_id` text,
	`reported_status` text,
	`outcome` text NOT NULL,
	`body_sha256` text NOT NULL,
	`received_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE INDEX `payment_notifications_topup` ON `payment_notifications` (`topup_id`);--> statement-breakpoint
CREATE TABLE `sandbox_invoices` (
	`invoice_id` text PRIMARY KEY NOT NULL,
	`order_id` text NOT NULL,
	`price_amount_micros` integer NOT NULL,
	`method` text NOT NULL,
	`created_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE TABLE `sandbox_payments` (
	`payment_id` text PRIMARY KEY NOT NULL,
	`invoice_id` text NOT NULL,
	`status` text NOT NULL,
	`price_amount_micros` integer NOT NULL,
	`paid_micros` integer NOT NULL,
	`created_at` integer NOT NULL
) STRICT;
--> statement-breakpoint
CREATE TABLE `topups` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`provider` text NOT NULL,
	`payment_method` text NOT NULL,
	`amount_micros` integer NOT NULL,
	`purpose_kind` text NOT NULL,
	`target_plan` text,
	`change_id` text,
	`status` text NOT NULL,
	`provider_status` text,
	`review_reason` text,
	`invoice_id` text,
	`checkout_url` text,
	`payment_id` text,
	`credited_micros` integer NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`succeeded_at` integer,
	`version` integer NOT NULL,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `topups_tenant` ON `topups` (`tenant_id`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `topups_invoice` ON `topups` (`provider`,`invoice_id`);--> statement-breakpoint
CREATE INDEX `topups_status` ON `topups` (`status`);