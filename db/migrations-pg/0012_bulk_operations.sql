CREATE TABLE "bulk_items" (
	"id" text PRIMARY KEY NOT NULL,
	"operation_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"position" bigint NOT NULL,
	"server_id" text NOT NULL,
	"server_name" text NOT NULL,
	"external_machine_id" text,
	"state" text NOT NULL,
	"before" text,
	"after" text,
	"reason" text,
	"attempts" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"finished_at" bigint
);

--> statement-breakpoint
CREATE TABLE "bulk_operations" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"action" text NOT NULL,
	"change" text NOT NULL,
	"selection" text NOT NULL,
	"state" text NOT NULL,
	"actor_kind" text NOT NULL,
	"actor_id" text,
	"created_at" bigint NOT NULL,
	"finished_at" bigint
);

--> statement-breakpoint
ALTER TABLE "bulk_items" ADD CONSTRAINT "bulk_items_operation_id_bulk_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "public"."bulk_operations"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "bulk_operations" ADD CONSTRAINT "bulk_operations_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "bulk_items_position" ON "bulk_items" USING btree ("operation_id","position");
--> statement-breakpoint
CREATE INDEX "bulk_items_tenant" ON "bulk_items" USING btree ("tenant_id","operation_id");
--> statement-breakpoint
CREATE INDEX "bulk_items_state" ON "bulk_items" USING btree ("state","tenant_id");
--> statement-breakpoint
CREATE INDEX "bulk_operations_tenant" ON "bulk_operations" USING btree ("tenant_id","created_at");
--> statement-breakpoint
CREATE INDEX "bulk_operations_state" ON "bulk_operations" USING btree ("state","created_at");
