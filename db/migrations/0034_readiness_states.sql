CREATE TABLE `readiness_states` (
	`tenant_id` text NOT NULL,
	`server_id` text NOT NULL,
	`marketplace` text NOT NULL,
	`verdicts` text NOT NULL,
	`baseline_driver` text,
	`baseline_cuda` text,
	`baseline_at` integer,
	`last_verification` text,
	`evaluated_at` integer NOT NULL,
	PRIMARY KEY(`server_id`, `marketplace`),
	FOREIGN KEY (`tenant_id`) REFERENCES `tenants`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`server_id`) REFERENCES `servers`(`id`) ON UPDATE no action ON DELETE no action
) STRICT;
--> statement-breakpoint
CREATE INDEX `readiness_states_tenant` ON `readiness_states` (`tenant_id`);