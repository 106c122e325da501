CREATE TABLE "report_gpu_days" (
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"metric" text NOT NULL,
	"day" bigint NOT NULL,
	"sum" double precision NOT NULL,
	"buckets" bigint NOT NULL,
	"gpu_hours" bigint NOT NULL,
	CONSTRAINT "report_gpu_days_tenant_id_server_id_metric_day_pk" PRIMARY KEY("tenant_id","server_id","metric","day")
);

--> statement-breakpoint
CREATE TABLE "report_gpu_spans" (
	"tenant_id" text NOT NULL,
	"server_id" text NOT NULL,
	"metric" text NOT NULL,
	"from_day" bigint NOT NULL,
	"until_day" bigint NOT NULL,
	CONSTRAINT "report_gpu_spans_tenant_id_server_id_metric_pk" PRIMARY KEY("tenant_id","server_id","metric")
);

