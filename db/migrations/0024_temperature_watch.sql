CREATE TABLE `temperature_watch` (
	`server_id` text NOT NULL,
	`gpu_index` integer NOT NULL,
	`over_since` integer,
	`alerted` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`server_id`, `gpu_index`)
) STRICT;
