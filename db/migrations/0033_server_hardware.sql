CREATE TABLE `server_xid_counts` (
	`server_id` text NOT NULL,
	`gpu_index` integer NOT NULL,
	`xid` integer NOT NULL,
	`count` integer NOT NULL,
	`last_at` integer NOT NULL,
	PRIMARY KEY(`server_id`, `gpu_index`, `xid`),
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
ALTER TABLE `servers` ADD `host_details` text;