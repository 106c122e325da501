CREATE TABLE "watchdog_rules" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"preset" text,
	"enabled" bigint NOT NULL,
	"enabled_at" bigint,
	"server_id" text,
	"group_id" text,
	"condition" text NOT NULL,
	"steps" text NOT NULL,
	"allow_during_rental" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"version" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "watchdog_signals" (
	"server_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"kind" text NOT NULL,
	"key" text NOT NULL,
	"value" bigint,
	"at" bigint NOT NULL,
	CONSTRAINT "watchdog_signals_server_id_kind_key_pk" PRIMARY KEY("server_id","kind","key")
);

--> statement-breakpoint
CREATE TABLE "watchdog_states" (
	"rule_id" text NOT NULL,
	"server_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"status" text NOT NULL,
	"step_index" bigint NOT NULL,
	"since" bigint,
	"last_step_at" bigint,
	"reference_at" bigint NOT NULL,
	"hold_reason" text,
	"notified" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "watchdog_states_rule_id_server_id_pk" PRIMARY KEY("rule_id","server_id")
);

--> statement-breakpoint
CREATE TABLE "watchdog_steps" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"rule_id" text NOT NULL,
	"server_id" text NOT NULL,
	"action" text NOT NULL,
	"outcome" text NOT NULL,
	"command_id" text,
	"note" text,
	"at" bigint NOT NULL
);

--> statement-breakpoint
ALTER TABLE "watchdog_rules" ADD CONSTRAINT "watchdog_rules_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "watchdog_signals" ADD CONSTRAINT "watchdog_signals_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "watchdog_states" ADD CONSTRAINT "watchdog_states_rule_id_watchdog_rules_id_fk" FOREIGN KEY ("rule_id") REFERENCES "public"."watchdog_rules"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "watchdog_states" ADD CONSTRAINT "watchdog_states_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "watchdog_steps" ADD CONSTRAINT "watchdog_steps_rule_id_watchdog_rules_id_fk" FOREIGN KEY ("rule_id") REFERENCES "public"."watchdog_rules"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "watchdog_steps" ADD CONSTRAINT "watchdog_steps_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "watchdog_rules_tenant" ON "watchdog_rules" USING btree ("tenant_id","created_at");
--> statement-breakpoint
CREATE UNIQUE INDEX "watchdog_rules_preset" ON "watchdog_rules" USING btree ("tenant_id","preset");
--> statement-breakpoint
CREATE INDEX "watchdog_states_tenant" ON "watchdog_states" USING btree ("tenant_id");
--> statement-breakpoint
CREATE INDEX "watchdog_steps_rule" ON "watchdog_steps" USING btree ("rule_id","server_id","at");
