CREATE TABLE "listing_profile_members" (
	"profile_id" text NOT NULL,
	"server_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"outcome" text NOT NULL,
	"reason" text,
	"version" bigint NOT NULL,
	"applied_at" bigint NOT NULL,
	CONSTRAINT "listing_profile_members_profile_id_server_id_pk" PRIMARY KEY("profile_id","server_id")
);

--> statement-breakpoint
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
ALTER TABLE "listing_profile_members" ADD CONSTRAINT "listing_profile_members_profile_id_listing_profiles_id_fk" FOREIGN KEY ("profile_id") REFERENCES "public"."listing_profiles"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "listing_profile_members" ADD CONSTRAINT "listing_profile_members_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "listing_profile_members" ADD CONSTRAINT "listing_profile_members_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "listing_profiles" ADD CONSTRAINT "listing_profiles_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "listing_profiles" ADD CONSTRAINT "listing_profiles_group_id_server_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."server_groups"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "listing_profiles_group" ON "listing_profiles" USING btree ("tenant_id","group_id","marketplace");
