-- Issue 34: live event ids per tenant. Events written before this migration keep their old id as
-- their seq, and every tenant with events or a prune horizon continues from the highest id ever
-- handed out, so a client holding an id from before resumes exactly where it was.
UPDATE "live_events" SET "seq" = "id";
--> statement-breakpoint
INSERT INTO "live_event_sequences" ("tenant_id", "last_seq")
SELECT t."tenant_id", greatest(
  coalesce((SELECT max("id") FROM "live_events"), 0),
  coalesce((SELECT max("pruned_through") FROM "live_event_horizons"), 0)
)
FROM (SELECT "tenant_id" FROM "live_events" UNION SELECT "tenant_id" FROM "live_event_horizons") AS t;
