CREATE TABLE "live_event_horizons" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"pruned_through" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "live_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"server_id" text,
	"type" text NOT NULL,
	"payload" text NOT NULL,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE INDEX "live_events_tenant" ON "live_events" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE INDEX "live_events_created" ON "live_events" USING btree ("created_at");
