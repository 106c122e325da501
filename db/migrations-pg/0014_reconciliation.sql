CREATE TABLE "platform_payouts" (
	"tenant_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"external_id" text NOT NULL,
	"type" text NOT NULL,
	"day" text NOT NULL,
	"start_at" bigint NOT NULL,
	"end_at" bigint,
	"amount_usd_micros" bigint NOT NULL,
	"description" text NOT NULL,
	"observed_at" bigint NOT NULL,
	CONSTRAINT "platform_payouts_tenant_id_marketplace_external_id_pk" PRIMARY KEY("tenant_id","marketplace","external_id")
);

--> statement-breakpoint
CREATE TABLE "reconciliation_flags" (
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"day" text NOT NULL,
	"gap_usd_micros" bigint NOT NULL,
	"flagged_at" bigint NOT NULL,
	CONSTRAINT "reconciliation_flags_tenant_id_server_id_marketplace_day_pk" PRIMARY KEY("tenant_id","server_id","marketplace","day")
);

--> statement-breakpoint
CREATE TABLE "reconciliation_settings" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"gap_threshold_usd_micros" bigint NOT NULL,
	"version" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "wallet_balances" (
	"tenant_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"currency" text NOT NULL,
	"day" text NOT NULL,
	"balance" text NOT NULL,
	"usd_micros" bigint,
	"observed_at" bigint NOT NULL,
	CONSTRAINT "wallet_balances_tenant_id_marketplace_currency_day_pk" PRIMARY KEY("tenant_id","marketplace","currency","day")
);

--> statement-breakpoint
ALTER TABLE "platform_payouts" ADD CONSTRAINT "platform_payouts_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "reconciliation_flags" ADD CONSTRAINT "reconciliation_flags_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "reconciliation_settings" ADD CONSTRAINT "reconciliation_settings_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "wallet_balances" ADD CONSTRAINT "wallet_balances_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "platform_payouts_tenant_day" ON "platform_payouts" USING btree ("tenant_id","day");
