CREATE TABLE `unsettled_payments` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`topup_id` text NOT NULL,
	`provider` text NOT NULL,
	`payment_id` text NOT NULL,
	`amount_micros` integer,
	`reason` text NOT NULL,
	`recorded_at` integer NOT NULL,
	`settled_at` integer,
	`settlement` text,
	`settlement_entry_id` text,
	`settlement_note` text,
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `unsettled_payments_payment` ON `unsettled_payments` (`provider`,`payment_id`);--> statement-breakpoint
CREATE INDEX `unsettled_payments_open` ON `unsettled_payments` (`settled_at`,`recorded_at`);--> statement-breakpoint
CREATE TABLE `plan_assignments` (
	`tenant_id` text NOT NULL,
	`effective_from` integer NOT NULL,
	`plan_code` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `effective_from`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE TABLE `plan_prices` (
	`plan_code` text NOT NULL,
	`effective_from` integer NOT NULL,
	`price_micros_per_server_month` integer,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`plan_code`, `effective_from`)
) STRICT;
--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `sealed_body` blob;--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `ledger_entries` ADD `topup_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_one_credit_per_topup` ON `ledger_entries` (`topup_id`) WHERE topup_id IS NOT NULL AND kind = 'topup' AND amount_micros > 0;--> statement-breakpoint
ALTER TABLE `sandbox_invoices` ADD `status` text DEFAULT 'open' NOT NULL;