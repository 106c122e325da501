CREATE TABLE "live_event_sequences" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"last_seq" bigint NOT NULL
);

--> statement-breakpoint
DROP INDEX "live_events_tenant";
--> statement-breakpoint
ALTER TABLE "live_events" ADD COLUMN "seq" bigint DEFAULT 0 NOT NULL;
--> statement-breakpoint
CREATE INDEX "live_events_tenant_seq" ON "live_events" USING btree ("tenant_id","seq");
