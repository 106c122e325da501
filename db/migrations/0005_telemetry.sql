CREATE TABLE `metric_rollups` (
	`series_id` integer NOT NULL,
	`grain` integer NOT NULL,
	`bucket` integer NOT NULL,
	`min` real,
	`max` real,
	`avg` real,
	`p50` real,
	`p95` real,
	`last` real,
	`samples` integer NOT NULL,
	PRIMARY KEY(`series_id`, `grain`, `bucket`)
) STRICT;
--> statement-breakpoint
CREATE INDEX `metric_rollups_grain_bucket` ON `metric_rollups` (`grain`,`bucket`);--> statement-breakpoint
CREATE TABLE `metric_samples` (
	`series_id` integer NOT NULL,
	`t` integer NOT NULL,
	`value` real,
	PRIMARY KEY(`series_id`, `t`)
) STRICT;
--> statement-breakpoint
CREATE INDEX `metric_samples_t` ON `metric_samples` (`t`);--> statement-breakpoint
CREATE TABLE `metric_series` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`server_id` text NOT NULL,
	`gpu_index` integer NOT NULL,
	`metric` text NOT NULL,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE UNIQUE INDEX `metric_series_key` ON `metric_series` (`server_id`,`gpu_index`,`metric`);--> statement-breakpoint
CREATE TABLE `rollup_watermarks` (
	`grain` integer PRIMARY KEY NOT NULL,
	`done_until` integer NOT NULL,
	`redo_from` integer,
	`updated_at` integer NOT NULL
) STRICT;
