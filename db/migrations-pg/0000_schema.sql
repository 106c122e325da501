CREATE TABLE "access_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"display_prefix" text NOT NULL,
	"token_hash" text NOT NULL,
	"scopes" text NOT NULL,
	"server_allowlist" text,
	"expires_at" bigint,
	"created_at" bigint NOT NULL,
	"last_used_at" bigint,
	"revoked_at" bigint
);

--> statement-breakpoint
CREATE TABLE "alert_incidents" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"kind" text NOT NULL,
	"cause_key" text NOT NULL,
	"severity" text NOT NULL,
	"server_id" text,
	"marketplace" text,
	"title" text NOT NULL,
	"detail" text NOT NULL,
	"state" text NOT NULL,
	"opened_at" bigint NOT NULL,
	"last_seen_at" bigint NOT NULL,
	"occurrences" bigint NOT NULL,
	"acknowledged_at" bigint,
	"acknowledged_by" text,
	"resolved_at" bigint,
	"resolved_by" text,
	"resolution" text,
	"notification_ids" text NOT NULL
);

--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"actor_kind" text NOT NULL,
	"actor_id" text,
	"operation" text NOT NULL,
	"target_kind" text,
	"target_id" text,
	"ip" text,
	"user_agent" text,
	"outcome" text NOT NULL,
	"status" bigint,
	"request_id" text,
	"detail" text,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "balances" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"balance_micros" bigint NOT NULL,
	"last_seq" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "billing_state" (
	"key" text PRIMARY KEY NOT NULL,
	"charged_until" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "captcha_tokens" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"used_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "charge_calculations" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"charge_hour" bigint NOT NULL,
	"plan_code" text NOT NULL,
	"price_micros_per_server_month" bigint NOT NULL,
	"days_in_month" bigint NOT NULL,
	"servers" bigint NOT NULL,
	"server_ids" text NOT NULL,
	"amount_micros" bigint NOT NULL,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "chat_link_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"expires_at" bigint NOT NULL,
	"used_at" bigint,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "command_logs" (
	"id" text PRIMARY KEY NOT NULL,
	"command_id" text NOT NULL,
	"text" text NOT NULL,
	"bytes" bigint NOT NULL,
	"truncated" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "command_timeline" (
	"id" text PRIMARY KEY NOT NULL,
	"command_id" text NOT NULL,
	"at" bigint NOT NULL,
	"axis" text NOT NULL,
	"from_state" text,
	"to_state" text NOT NULL,
	"note" text
);

--> statement-breakpoint
CREATE TABLE "commands" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"type" text NOT NULL,
	"schema_version" bigint NOT NULL,
	"params" text NOT NULL,
	"requires" text NOT NULL,
	"delivery_status" text NOT NULL,
	"execution_status" text NOT NULL,
	"queue_reason" text,
	"progress" bigint,
	"result" text,
	"error" text,
	"issued_by_type" text NOT NULL,
	"issued_by_id" text,
	"idempotency_key" text,
	"created_at" bigint NOT NULL,
	"accept_by" bigint,
	"deadline" bigint,
	"sent_at" bigint,
	"accepted_at" bigint,
	"started_at" bigint,
	"finished_at" bigint,
	"cancelled_at" bigint,
	"cancel_requested_at" bigint,
	"send_count" bigint NOT NULL,
	"version" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "cost_bases" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"electricity_micros_per_kwh" bigint,
	"operational_micros_per_month" bigint,
	"marketplaces" text NOT NULL,
	"version" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "earnings_days" (
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"day" text NOT NULL,
	"accrued_usd_micros" bigint NOT NULL,
	"accrued_us" bigint NOT NULL,
	"gap_us" bigint NOT NULL,
	"samples" bigint NOT NULL,
	"platform_usd_micros" bigint,
	"by_currency" text NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "earnings_days_tenant_id_server_id_marketplace_day_pk" PRIMARY KEY("tenant_id","server_id","marketplace","day")
);

--> statement-breakpoint
CREATE TABLE "earnings_reports" (
	"tenant_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"read_at" bigint NOT NULL,
	CONSTRAINT "earnings_reports_tenant_id_marketplace_pk" PRIMARY KEY("tenant_id","marketplace")
);

--> statement-breakpoint
CREATE TABLE "earnings_watermarks" (
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"accrued_until" bigint NOT NULL,
	CONSTRAINT "earnings_watermarks_tenant_id_server_id_marketplace_pk" PRIMARY KEY("tenant_id","server_id","marketplace")
);

--> statement-breakpoint
CREATE TABLE "email_codes" (
	"id" text PRIMARY KEY NOT NULL,
	"purpose" text NOT NULL,
	"email_hash" text NOT NULL,
	"email" text NOT NULL,
	"tenant_name" text,
	"user_id" text,
	"code_hash" text,
	"inert" bigint NOT NULL,
	"attempts" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"last_sent_at" bigint NOT NULL,
	"consumed_at" bigint,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "fleet_snapshots" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"generated_at" bigint NOT NULL,
	"data_as_of" bigint NOT NULL,
	"body" text NOT NULL,
	"dirty" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"scope" text NOT NULL,
	"operation" text NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"state" text NOT NULL,
	"locked_until" bigint NOT NULL,
	"response_status" bigint,
	"response_box" "bytea",
	"created_at" bigint NOT NULL,
	CONSTRAINT "idempotency_keys_scope_operation_key_pk" PRIMARY KEY("scope","operation","key")
);

--> statement-breakpoint
CREATE TABLE "init_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"created_by" text NOT NULL,
	"token_hash" text NOT NULL,
	"server_id" text,
	"expected_fingerprint" text,
	"purpose" text,
	"expires_at" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"claimed_at" bigint,
	"claimed_server_id" text,
	"revoked_at" bigint
);

--> statement-breakpoint
CREATE TABLE "job_leases" (
	"job" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"leased_until" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "job_runs" (
	"job" text NOT NULL,
	"period" text NOT NULL,
	"holder" text NOT NULL,
	"started_at" bigint NOT NULL,
	"finished_at" bigint,
	"outcome" text NOT NULL,
	"detail" text,
	CONSTRAINT "job_runs_job_period_pk" PRIMARY KEY("job","period")
);

--> statement-breakpoint
CREATE TABLE "ledger_entries" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"kind" text NOT NULL,
	"amount_micros" bigint NOT NULL,
	"balance_after_micros" bigint NOT NULL,
	"occurred_at" bigint NOT NULL,
	"charge_day" text,
	"charge_hour" bigint,
	"detail" text NOT NULL,
	"calculation_id" text,
	"payment_ref" text,
	"topup_id" text,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "mail_outbox" (
	"id" text PRIMARY KEY NOT NULL,
	"to" text NOT NULL,
	"subject" text NOT NULL,
	"text" text NOT NULL,
	"html" text NOT NULL,
	"template" text NOT NULL,
	"status" text NOT NULL,
	"attempts" bigint NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"last_error" text,
	"created_at" bigint NOT NULL,
	"sent_at" bigint,
	"sealed_body" "bytea",
	"expires_at" bigint
);

--> statement-breakpoint
CREATE TABLE "market_snapshots" (
	"id" text PRIMARY KEY NOT NULL,
	"marketplace" text NOT NULL,
	"gpu_model" text NOT NULL,
	"taken_at" bigint NOT NULL,
	"count" bigint NOT NULL,
	"gpus" bigint NOT NULL,
	"min_micros" bigint NOT NULL,
	"p25_micros" bigint NOT NULL,
	"median_micros" bigint NOT NULL,
	"p75_micros" bigint NOT NULL,
	"max_micros" bigint NOT NULL,
	"prices" text NOT NULL
);

--> statement-breakpoint
CREATE TABLE "marketplace_accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"status" text NOT NULL,
	"key_box" text NOT NULL,
	"key_hash" text NOT NULL,
	"owner" text NOT NULL,
	"holding_micros" bigint,
	"connected_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"last_success_at" bigint,
	"last_failure_at" bigint,
	"last_failure" text
);

--> statement-breakpoint
CREATE TABLE "marketplace_links" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"account_id" text NOT NULL,
	"external_machine_id" text NOT NULL,
	"bind_mode" text NOT NULL,
	"state" text NOT NULL,
	"linked_at" bigint NOT NULL,
	"last_seen_at" bigint,
	"remote" text NOT NULL,
	"marketplace_b" text,
	"offer" text,
	"offer_published_at" bigint
);

--> statement-breakpoint
CREATE TABLE "marketplace_operations" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"server_id" text,
	"operation" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"status" bigint,
	"outcome" text NOT NULL,
	"latency_ms" bigint NOT NULL,
	"reason" text,
	"actor_kind" text NOT NULL,
	"actor_id" text,
	"started_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "mcp_access" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"enabled" bigint NOT NULL,
	"token_hash" text,
	"prefix" text,
	"allowed_tools" text NOT NULL,
	"issued_by" text,
	"issued_at" bigint,
	"expires_at" bigint,
	"last_used_at" bigint,
	"version" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "mcp_clients" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"redirect_uris" text NOT NULL,
	"metadata" text NOT NULL,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "mcp_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"client_id" text NOT NULL,
	"user_id" text NOT NULL,
	"redirect_uri" text NOT NULL,
	"code_challenge" text NOT NULL,
	"resource" text NOT NULL,
	"expires_at" bigint NOT NULL,
	"used_at" bigint,
	"family_id" text,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "mcp_connections" (
	"tenant_id" text NOT NULL,
	"client_id" text NOT NULL,
	"user_id" text NOT NULL,
	"connected_at" bigint NOT NULL,
	"last_used_at" bigint,
	CONSTRAINT "mcp_connections_tenant_id_client_id_pk" PRIMARY KEY("tenant_id","client_id")
);

--> statement-breakpoint
CREATE TABLE "mcp_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"kind" text NOT NULL,
	"family_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"client_id" text NOT NULL,
	"user_id" text NOT NULL,
	"resource" text NOT NULL,
	"expires_at" bigint NOT NULL,
	"used_at" bigint,
	"revoked_at" bigint,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "metric_rollups" (
	"series_id" bigint NOT NULL,
	"grain" bigint NOT NULL,
	"bucket" bigint NOT NULL,
	"min" double precision,
	"max" double precision,
	"avg" double precision,
	"p50" double precision,
	"p95" double precision,
	"last" double precision,
	"samples" bigint NOT NULL,
	CONSTRAINT "metric_rollups_series_id_grain_bucket_pk" PRIMARY KEY("series_id","grain","bucket")
);

--> statement-breakpoint
CREATE TABLE "metric_samples" (
	"series_id" bigint NOT NULL,
	"t" bigint NOT NULL,
	"value" double precision,
	CONSTRAINT "metric_samples_series_id_t_pk" PRIMARY KEY("series_id","t")
);

--> statement-breakpoint
CREATE TABLE "metric_series" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"server_id" text NOT NULL,
	"gpu_index" bigint NOT NULL,
	"metric" text NOT NULL
);

--> statement-breakpoint
CREATE TABLE "notification_attempts" (
	"id" text PRIMARY KEY NOT NULL,
	"delivery_id" text NOT NULL,
	"at" bigint NOT NULL,
	"outcome" text NOT NULL,
	"http_status" bigint,
	"error" text
);

--> statement-breakpoint
CREATE TABLE "notification_channels" (
	"tenant_id" text NOT NULL,
	"kind" text NOT NULL,
	"status" text NOT NULL,
	"destination" text,
	"verified_at" bigint,
	"disabled_reason" text,
	"pending_address" text,
	"pending_code_hash" text,
	"pending_expires_at" bigint,
	"pending_attempts" bigint DEFAULT 0 NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "notification_channels_tenant_id_kind_pk" PRIMARY KEY("tenant_id","kind")
);

--> statement-breakpoint
CREATE TABLE "notification_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"notification_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"channel" text NOT NULL,
	"destination" text,
	"status" text NOT NULL,
	"attempts" bigint NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"claimed_until" bigint,
	"last_error" text,
	"sent_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "notification_events" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"category" text NOT NULL,
	"kind" text NOT NULL,
	"payload" text NOT NULL,
	"created_at" bigint NOT NULL,
	"delivered_at" bigint
);

--> statement-breakpoint
CREATE TABLE "notification_settings" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"rules" text NOT NULL,
	"quiet_enabled" bigint NOT NULL,
	"quiet_from" text NOT NULL,
	"quiet_to" text NOT NULL,
	"version" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "notifications" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"category" text NOT NULL,
	"title" text NOT NULL,
	"body" text NOT NULL,
	"critical" bigint NOT NULL,
	"group_key" text,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "payment_notifications" (
	"id" text PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"topup_id" text,
	"payment_id" text,
	"reported_status" text,
	"outcome" text NOT NULL,
	"body_sha256" text NOT NULL,
	"received_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "plan_assignments" (
	"tenant_id" text NOT NULL,
	"effective_from" bigint NOT NULL,
	"plan_code" text,
	"created_at" bigint NOT NULL,
	CONSTRAINT "plan_assignments_tenant_id_effective_from_pk" PRIMARY KEY("tenant_id","effective_from")
);

--> statement-breakpoint
CREATE TABLE "plan_periods" (
	"tenant_id" text NOT NULL,
	"effective_day" text NOT NULL,
	"plan_code" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "plan_periods_tenant_id_effective_day_pk" PRIMARY KEY("tenant_id","effective_day")
);

--> statement-breakpoint
CREATE TABLE "plan_prices" (
	"plan_code" text NOT NULL,
	"effective_from" bigint NOT NULL,
	"price_micros_per_server_month" bigint,
	"created_at" bigint NOT NULL,
	CONSTRAINT "plan_prices_plan_code_effective_from_pk" PRIMARY KEY("plan_code","effective_from")
);

--> statement-breakpoint
CREATE TABLE "plans" (
	"code" text PRIMARY KEY NOT NULL,
	"label" text NOT NULL,
	"price_micros_per_server_month" bigint,
	"servers_max" bigint,
	"features" text NOT NULL,
	"upgrade_effective" text NOT NULL,
	"downgrade_effective" text NOT NULL,
	"position" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "rate_limits" (
	"bucket" text PRIMARY KEY NOT NULL,
	"tat" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "rollup_watermarks" (
	"grain" bigint PRIMARY KEY NOT NULL,
	"done_until" bigint NOT NULL,
	"redo_from" bigint,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "sandbox_invoices" (
	"invoice_id" text PRIMARY KEY NOT NULL,
	"order_id" text NOT NULL,
	"price_amount_micros" bigint NOT NULL,
	"method" text NOT NULL,
	"created_at" bigint NOT NULL,
	"status" text DEFAULT 'open' NOT NULL
);

--> statement-breakpoint
CREATE TABLE "sandbox_payments" (
	"payment_id" text PRIMARY KEY NOT NULL,
	"invoice_id" text NOT NULL,
	"status" text NOT NULL,
	"price_amount_micros" bigint NOT NULL,
	"paid_micros" bigint NOT NULL,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "server_events" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"kind" text NOT NULL,
	"severity" text NOT NULL,
	"message" text NOT NULL,
	"data" text,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "server_groups" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"position" bigint NOT NULL,
	"version" bigint NOT NULL,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "server_keep_on" (
	"server_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"tenant_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "server_keep_on_server_id_marketplace_pk" PRIMARY KEY("server_id","marketplace")
);

--> statement-breakpoint
CREATE TABLE "server_latest_metrics" (
	"server_id" text NOT NULL,
	"gpu_index" bigint NOT NULL,
	"metric" text NOT NULL,
	"value" double precision,
	"t" bigint NOT NULL,
	CONSTRAINT "server_latest_metrics_server_id_gpu_index_metric_pk" PRIMARY KEY("server_id","gpu_index","metric")
);

--> statement-breakpoint
CREATE TABLE "servers" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"created_at" bigint NOT NULL,
	"decommissioned_at" bigint,
	"version" bigint DEFAULT 1 NOT NULL,
	"hostname" text,
	"fingerprint" text,
	"public_ip" text,
	"disk_gb" bigint,
	"port_range" text,
	"agent_version" text,
	"gpus" text DEFAULT '[]' NOT NULL,
	"gpu_count" bigint DEFAULT 0 NOT NULL,
	"gpu_model" text DEFAULT '' NOT NULL,
	"group_id" text,
	"tags" text DEFAULT '[]' NOT NULL,
	"electricity_micros_per_kwh" bigint,
	"maintenance_since" bigint,
	"maintenance_reason" text,
	"presence" text DEFAULT 'offline' NOT NULL,
	"last_seen_at" bigint,
	"last_hello_at" bigint,
	"agent_token_hash" text,
	"enrolled_at" bigint,
	"rental_active" bigint DEFAULT 0 NOT NULL,
	"rental_source" text,
	"rental_updated_at" bigint,
	"market_rentals" text DEFAULT '[]' NOT NULL
);

--> statement-breakpoint
CREATE TABLE "service_settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"created_at" bigint NOT NULL,
	"last_seen_at" bigint NOT NULL,
	"idle_expires_at" bigint NOT NULL,
	"absolute_expires_at" bigint NOT NULL,
	"ip" text,
	"user_agent" text
);

--> statement-breakpoint
CREATE TABLE "signin_failures" (
	"key" text PRIMARY KEY NOT NULL,
	"failures" bigint NOT NULL,
	"blocked_until" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "strategy_policies" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"marketplace" text NOT NULL,
	"target" text NOT NULL,
	"min_margin_percent" text NOT NULL,
	"target_percentile" bigint NOT NULL,
	"ceiling_micros" bigint,
	"rounding_step_micros" bigint NOT NULL,
	"cadence_minutes" bigint NOT NULL,
	"raise_while_rented" text NOT NULL,
	"coin" text,
	"enabled" bigint NOT NULL,
	"version" bigint NOT NULL,
	"last_run_at" bigint,
	"created_by" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "strategy_suggestions" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"policy_id" text NOT NULL,
	"server_id" text NOT NULL,
	"marketplace" text NOT NULL,
	"state" text NOT NULL,
	"evaluation" text NOT NULL,
	"offer" text NOT NULL,
	"current_micros" bigint,
	"suggested_micros" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"claimed_at" bigint,
	"decided_at" bigint,
	"decided_by" text,
	"dismiss_reason" text,
	"outcome" text
);

--> statement-breakpoint
CREATE TABLE "subscription_changes" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"from_plan" text NOT NULL,
	"target_plan" text NOT NULL,
	"direction" text NOT NULL,
	"status" text NOT NULL,
	"refusal_reason" text,
	"effective_at" bigint NOT NULL,
	"billing_effective_day" text NOT NULL,
	"required_reserve_micros" bigint NOT NULL,
	"topup_id" text,
	"requested_at" bigint NOT NULL,
	"applied_at" bigint,
	"cancelled_at" bigint,
	"refused_at" bigint
);

--> statement-breakpoint
CREATE TABLE "telegram_state" (
	"id" text PRIMARY KEY NOT NULL,
	"update_offset" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "temperature_watch" (
	"server_id" text NOT NULL,
	"gpu_index" bigint NOT NULL,
	"over_since" bigint,
	"alerted" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "temperature_watch_server_id_gpu_index_pk" PRIMARY KEY("server_id","gpu_index")
);

--> statement-breakpoint
CREATE TABLE "tenants" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"plan_code" text,
	"account_state" text DEFAULT 'active' NOT NULL,
	"grace_since" bigint,
	"frozen_at" bigint,
	"subscription_version" bigint DEFAULT 1 NOT NULL,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "test_probes" (
	"id" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL,
	"version" bigint NOT NULL,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "tickets" (
	"id" text PRIMARY KEY NOT NULL,
	"purpose" text NOT NULL,
	"token_hash" text NOT NULL,
	"email" text NOT NULL,
	"tenant_name" text,
	"user_id" text,
	"expires_at" bigint NOT NULL,
	"consumed_at" bigint,
	"created_at" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "topups" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"provider" text NOT NULL,
	"payment_method" text NOT NULL,
	"amount_micros" bigint NOT NULL,
	"purpose_kind" text NOT NULL,
	"target_plan" text,
	"change_id" text,
	"status" text NOT NULL,
	"provider_status" text,
	"review_reason" text,
	"invoice_id" text,
	"checkout_url" text,
	"payment_id" text,
	"credited_micros" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"succeeded_at" bigint,
	"version" bigint NOT NULL
);

--> statement-breakpoint
CREATE TABLE "unsettled_payments" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"topup_id" text NOT NULL,
	"provider" text NOT NULL,
	"payment_id" text NOT NULL,
	"amount_micros" bigint,
	"reason" text NOT NULL,
	"recorded_at" bigint NOT NULL,
	"settled_at" bigint,
	"settlement" text,
	"settlement_entry_id" text,
	"settlement_note" text
);

--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"email" text NOT NULL,
	"password_hash" text,
	"role" text NOT NULL,
	"display_name" text,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"locale" text DEFAULT 'en' NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);

--> statement-breakpoint
ALTER TABLE "access_tokens" ADD CONSTRAINT "access_tokens_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "access_tokens" ADD CONSTRAINT "access_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "alert_incidents" ADD CONSTRAINT "alert_incidents_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "balances" ADD CONSTRAINT "balances_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "chat_link_codes" ADD CONSTRAINT "chat_link_codes_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "command_logs" ADD CONSTRAINT "command_logs_command_id_commands_id_fk" FOREIGN KEY ("command_id") REFERENCES "public"."commands"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "command_timeline" ADD CONSTRAINT "command_timeline_command_id_commands_id_fk" FOREIGN KEY ("command_id") REFERENCES "public"."commands"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "commands" ADD CONSTRAINT "commands_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "cost_bases" ADD CONSTRAINT "cost_bases_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "earnings_days" ADD CONSTRAINT "earnings_days_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "init_tokens" ADD CONSTRAINT "init_tokens_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "init_tokens" ADD CONSTRAINT "init_tokens_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD CONSTRAINT "ledger_entries_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "marketplace_accounts" ADD CONSTRAINT "marketplace_accounts_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "marketplace_links" ADD CONSTRAINT "marketplace_links_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "marketplace_links" ADD CONSTRAINT "marketplace_links_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "marketplace_links" ADD CONSTRAINT "marketplace_links_account_id_marketplace_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."marketplace_accounts"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "marketplace_operations" ADD CONSTRAINT "marketplace_operations_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "marketplace_operations" ADD CONSTRAINT "marketplace_operations_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "mcp_access" ADD CONSTRAINT "mcp_access_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "mcp_access" ADD CONSTRAINT "mcp_access_issued_by_users_id_fk" FOREIGN KEY ("issued_by") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "mcp_codes" ADD CONSTRAINT "mcp_codes_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "mcp_connections" ADD CONSTRAINT "mcp_connections_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "mcp_connections" ADD CONSTRAINT "mcp_connections_client_id_mcp_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."mcp_clients"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "mcp_connections" ADD CONSTRAINT "mcp_connections_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "mcp_tokens" ADD CONSTRAINT "mcp_tokens_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "metric_series" ADD CONSTRAINT "metric_series_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "notification_attempts" ADD CONSTRAINT "notification_attempts_delivery_id_notification_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."notification_deliveries"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "notification_channels" ADD CONSTRAINT "notification_channels_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD CONSTRAINT "notification_deliveries_notification_id_notifications_id_fk" FOREIGN KEY ("notification_id") REFERENCES "public"."notifications"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "notification_settings" ADD CONSTRAINT "notification_settings_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "plan_assignments" ADD CONSTRAINT "plan_assignments_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "plan_periods" ADD CONSTRAINT "plan_periods_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "server_events" ADD CONSTRAINT "server_events_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "server_groups" ADD CONSTRAINT "server_groups_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "server_keep_on" ADD CONSTRAINT "server_keep_on_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "server_latest_metrics" ADD CONSTRAINT "server_latest_metrics_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "servers" ADD CONSTRAINT "servers_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "servers" ADD CONSTRAINT "servers_group_id_server_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."server_groups"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "strategy_policies" ADD CONSTRAINT "strategy_policies_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "strategy_policies" ADD CONSTRAINT "strategy_policies_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "strategy_suggestions" ADD CONSTRAINT "strategy_suggestions_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "subscription_changes" ADD CONSTRAINT "subscription_changes_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "topups" ADD CONSTRAINT "topups_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "unsettled_payments" ADD CONSTRAINT "unsettled_payments_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "access_tokens_hash" ON "access_tokens" USING btree ("token_hash");
--> statement-breakpoint
CREATE INDEX "access_tokens_tenant" ON "access_tokens" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE INDEX "alert_incidents_tenant" ON "alert_incidents" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX "alert_incidents_open_cause" ON "alert_incidents" USING btree ("tenant_id","cause_key") WHERE state <> 'resolved';
--> statement-breakpoint
CREATE INDEX "alert_incidents_cause_resolved" ON "alert_incidents" USING btree ("tenant_id","cause_key","resolved_at");
--> statement-breakpoint
CREATE INDEX "audit_log_tenant" ON "audit_log" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX "charge_calculations_tenant_hour" ON "charge_calculations" USING btree ("tenant_id","charge_hour");
--> statement-breakpoint
CREATE INDEX "command_timeline_command" ON "command_timeline" USING btree ("command_id","id");
--> statement-breakpoint
CREATE INDEX "commands_tenant" ON "commands" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE INDEX "commands_server_delivery" ON "commands" USING btree ("server_id","delivery_status");
--> statement-breakpoint
CREATE INDEX "commands_expiry" ON "commands" USING btree ("execution_status","deadline");
--> statement-breakpoint
CREATE INDEX "earnings_days_tenant_day" ON "earnings_days" USING btree ("tenant_id","day");
--> statement-breakpoint
CREATE UNIQUE INDEX "email_codes_purpose_email" ON "email_codes" USING btree ("purpose","email_hash");
--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_at" ON "idempotency_keys" USING btree ("created_at");
--> statement-breakpoint
CREATE UNIQUE INDEX "init_tokens_hash" ON "init_tokens" USING btree ("token_hash");
--> statement-breakpoint
CREATE INDEX "init_tokens_tenant" ON "init_tokens" USING btree ("tenant_id");
--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_tenant_seq" ON "ledger_entries" USING btree ("tenant_id","seq");
--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_one_charge_per_hour" ON "ledger_entries" USING btree ("tenant_id","charge_hour") WHERE kind = 'charge';
--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_one_credit_per_payment" ON "ledger_entries" USING btree ("payment_ref") WHERE payment_ref IS NOT NULL;
--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_one_credit_per_topup" ON "ledger_entries" USING btree ("topup_id") WHERE topup_id IS NOT NULL AND kind = 'topup' AND amount_micros > 0;
--> statement-breakpoint
CREATE INDEX "ledger_tenant_occurred" ON "ledger_entries" USING btree ("tenant_id","occurred_at","id");
--> statement-breakpoint
CREATE INDEX "mail_outbox_due" ON "mail_outbox" USING btree ("status","next_attempt_at");
--> statement-breakpoint
CREATE INDEX "market_snapshots_model" ON "market_snapshots" USING btree ("marketplace","gpu_model","taken_at");
--> statement-breakpoint
CREATE INDEX "market_snapshots_taken" ON "market_snapshots" USING btree ("taken_at");
--> statement-breakpoint
CREATE UNIQUE INDEX "marketplace_accounts_tenant" ON "marketplace_accounts" USING btree ("tenant_id","marketplace");
--> statement-breakpoint
CREATE UNIQUE INDEX "marketplace_links_server" ON "marketplace_links" USING btree ("tenant_id","server_id","marketplace");
--> statement-breakpoint
CREATE INDEX "marketplace_links_machine" ON "marketplace_links" USING btree ("tenant_id","marketplace","external_machine_id");
--> statement-breakpoint
CREATE INDEX "marketplace_operations_tenant" ON "marketplace_operations" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE INDEX "marketplace_operations_server" ON "marketplace_operations" USING btree ("tenant_id","server_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_tokens_hash" ON "mcp_tokens" USING btree ("token_hash");
--> statement-breakpoint
CREATE INDEX "mcp_tokens_family" ON "mcp_tokens" USING btree ("family_id");
--> statement-breakpoint
CREATE INDEX "mcp_tokens_client" ON "mcp_tokens" USING btree ("tenant_id","client_id");
--> statement-breakpoint
CREATE INDEX "metric_rollups_grain_bucket" ON "metric_rollups" USING btree ("grain","bucket");
--> statement-breakpoint
CREATE INDEX "metric_samples_t" ON "metric_samples" USING btree ("t");
--> statement-breakpoint
CREATE UNIQUE INDEX "metric_series_key" ON "metric_series" USING btree ("server_id","gpu_index","metric");
--> statement-breakpoint
CREATE INDEX "notification_attempts_delivery" ON "notification_attempts" USING btree ("delivery_id","at");
--> statement-breakpoint
CREATE INDEX "notification_deliveries_due" ON "notification_deliveries" USING btree ("status","next_attempt_at");
--> statement-breakpoint
CREATE INDEX "notification_deliveries_notification" ON "notification_deliveries" USING btree ("notification_id");
--> statement-breakpoint
CREATE INDEX "notification_events_tenant" ON "notification_events" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE INDEX "notifications_tenant" ON "notifications" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE INDEX "notifications_group" ON "notifications" USING btree ("tenant_id","group_key","created_at");
--> statement-breakpoint
CREATE INDEX "payment_notifications_topup" ON "payment_notifications" USING btree ("topup_id");
--> statement-breakpoint
CREATE INDEX "rate_limits_expires_at" ON "rate_limits" USING btree ("expires_at");
--> statement-breakpoint
CREATE INDEX "server_events_server" ON "server_events" USING btree ("server_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX "server_groups_tenant_name" ON "server_groups" USING btree ("tenant_id","name");
--> statement-breakpoint
CREATE INDEX "servers_tenant" ON "servers" USING btree ("tenant_id");
--> statement-breakpoint
CREATE UNIQUE INDEX "servers_agent_token" ON "servers" USING btree ("agent_token_hash");
--> statement-breakpoint
CREATE INDEX "servers_presence" ON "servers" USING btree ("presence","last_seen_at");
--> statement-breakpoint
CREATE UNIQUE INDEX "sessions_token_hash" ON "sessions" USING btree ("token_hash");
--> statement-breakpoint
CREATE INDEX "sessions_user" ON "sessions" USING btree ("user_id");
--> statement-breakpoint
CREATE INDEX "strategy_policies_tenant" ON "strategy_policies" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE INDEX "strategy_suggestions_tenant" ON "strategy_suggestions" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE INDEX "strategy_suggestions_offer" ON "strategy_suggestions" USING btree ("tenant_id","server_id","marketplace","state");
--> statement-breakpoint
CREATE INDEX "subscription_changes_tenant" ON "subscription_changes" USING btree ("tenant_id","status");
--> statement-breakpoint
CREATE INDEX "subscription_changes_due" ON "subscription_changes" USING btree ("status","effective_at");
--> statement-breakpoint
CREATE UNIQUE INDEX "tickets_token_hash" ON "tickets" USING btree ("token_hash");
--> statement-breakpoint
CREATE INDEX "topups_tenant" ON "topups" USING btree ("tenant_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX "topups_invoice" ON "topups" USING btree ("provider","invoice_id");
--> statement-breakpoint
CREATE INDEX "topups_status" ON "topups" USING btree ("status");
--> statement-breakpoint
CREATE UNIQUE INDEX "unsettled_payments_payment" ON "unsettled_payments" USING btree ("provider","payment_id");
--> statement-breakpoint
CREATE INDEX "unsettled_payments_open" ON "unsettled_payments" USING btree ("settled_at","recorded_at");
--> statement-breakpoint
CREATE UNIQUE INDEX "users_email" ON "users" USING btree ("email");
--> statement-breakpoint
CREATE INDEX "users_tenant" ON "users" USING btree ("tenant_id");
