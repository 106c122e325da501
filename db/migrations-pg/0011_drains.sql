CREATE TABLE "drains" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"live_server_id" text,
	"group_id" text,
	"state" text NOT NULL,
	"reason" text,
	"maintenance_window" text NOT NULL,
	"links" text NOT NULL,
	"work" text NOT NULL,
	"command_ids" text NOT NULL,
	"failure" text,
	"failed_step" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"finished_at" bigint,
	"version" bigint NOT NULL
);

--> statement-breakpoint
ALTER TABLE "drains" ADD CONSTRAINT "drains_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "drains" ADD CONSTRAINT "drains_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "drains_tenant" ON "drains" USING btree ("tenant_id","created_at");
--> statement-breakpoint
CREATE INDEX "drains_server" ON "drains" USING btree ("server_id","created_at");
--> statement-breakpoint
CREATE UNIQUE INDEX "drains_live_server" ON "drains" USING btree ("live_server_id");
