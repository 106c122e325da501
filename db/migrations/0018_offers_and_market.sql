CREATE TABLE `market_snapshots` (
	`id` text PRIMARY KEY NOT NULL,
	`marketplace` text NOT NULL,
	`gpu_model` text NOT NULL,
	`taken_at` integer NOT NULL,
	`count` integer NOT NULL,
	`gpus` integer NOT NULL,
	`min_micros` integer NOT NULL,
	`p25_micros` integer NOT NULL,
	`median_micros` integer NOT NULL,
	`p75_micros` integer NOT NULL,
	`max_micros` integer NOT NULL,
	`prices` text NOT NULL
) STRICT;
--> statement-breakpoint
CREATE INDEX `market_snapshots_model` ON `market_snapshots` (`marketplace`,`gpu_model`,`taken_at`);--> statement-breakpoint
CREATE INDEX `market_snapshots_taken` ON `market_snapshots` (`taken_at`);--> statement-breakpoint
ALTER TABLE `marketplace_links` ADD `offer` text;--> statement-breakpoint
ALTER TABLE `marketplace_links` ADD `offer_published_at` integer;--> statement-breakpoint
ALTER TABLE `marketplace_operations` ADD `reason` text;