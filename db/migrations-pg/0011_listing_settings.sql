CREATE TABLE "listing_profiles" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"group_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"name" text NOT NULL,
	"offer" text,
	"end_date_days" bigint,
	"idle_job" text,
	"keep_on" bigint,
	"version" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"applied_at" bigint
);

--> statement-breakpoint
ALTER TABLE "marketplace_links" ADD COLUMN "end_date_days" bigint;
--> statement-breakpoint
ALTER TABLE "marketplace_links" ADD COLUMN "end_date_extended_to" bigint;
--> statement-breakpoint
ALTER TABLE "marketplace_links" ADD COLUMN "end_date_extended_at" bigint;
--> statement-breakpoint
ALTER TABLE "marketplace_links" ADD COLUMN "idle_job" text;
--> statement-breakpoint
ALTER TABLE "listing_profiles" ADD CONSTRAINT "listing_profiles_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "listing_profiles" ADD CONSTRAINT "listing_profiles_group_id_server_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."server_groups"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "listing_profiles_group" ON "listing_profiles" USING btree ("tenant_id","group_id","marketplace");
