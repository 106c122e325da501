CREATE TABLE "readiness_states" (
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"verdicts" text NOT NULL,
	"baseline_driver" text,
	"baseline_cuda" text,
	"baseline_at" bigint,
	"last_verification" text,
	"evaluated_at" bigint NOT NULL,
	CONSTRAINT "readiness_states_server_id_marketplace_pk" PRIMARY KEY("server_id","marketplace")
);

--> statement-breakpoint
ALTER TABLE "readiness_states" ADD CONSTRAINT "readiness_states_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "readiness_states" ADD CONSTRAINT "readiness_states_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "readiness_states_tenant" ON "readiness_states" USING btree ("tenant_id");
