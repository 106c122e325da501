CREATE TABLE "server_xid_counts" (
	"server_id" text NOT NULL,
	"gpu_index" bigint NOT NULL,
	"xid" bigint NOT NULL,
	"count" bigint NOT NULL,
	"last_at" bigint NOT NULL,
	CONSTRAINT "server_xid_counts_server_id_gpu_index_xid_pk" PRIMARY KEY("server_id","gpu_index","xid")
);

--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "host_details" text;
--> statement-breakpoint
ALTER TABLE "server_xid_counts" ADD CONSTRAINT "server_xid_counts_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;
