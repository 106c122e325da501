CREATE TABLE "renter_reports" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"external_machine_id" text NOT NULL,
	"report_key" text NOT NULL,
	"problem" text,
	"message" text,
	"reported_at" bigint,
	"seen_at" bigint NOT NULL,
	"alerted" bigint NOT NULL
);

--> statement-breakpoint
ALTER TABLE "renter_reports" ADD CONSTRAINT "renter_reports_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "renter_reports" ADD CONSTRAINT "renter_reports_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "renter_reports_key" ON "renter_reports" USING btree ("tenant_id","marketplace","external_machine_id","report_key");
--> statement-breakpoint
CREATE INDEX "renter_reports_server" ON "renter_reports" USING btree ("tenant_id","server_id","id");
