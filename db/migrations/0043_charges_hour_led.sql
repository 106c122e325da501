-- The hourly charge run's two "one per tenant and hour" unique indexes lead with the hour instead
-- of the tenant. An hourly run writes one entry and one calculation per tenant, all for the same
-- hour: tenant-led, those keys were spread over every leaf page of both indexes (a page per tenant
-- once a tenant's history fills one), each dirtied, logged to the WAL and checkpointed every hour;
-- hour-led, they are appended at the end of each index (a page per ~80 tenants). Uniqueness is the
-- same pair. The batch's read of who is charged already (charge_hour = ? AND tenant_id IN …) is
-- answered by the new order; a tenant's calculations are read through its ledger entries
-- (ledger_tenant_occurred), so charge_calculations keeps no tenant-led index (docs/billing.md
-- "What a charge writes", bench/README.md "bench/charges.ts").
DROP INDEX `charge_calculations_tenant_hour`;--> statement-breakpoint
CREATE UNIQUE INDEX `charge_calculations_hour_tenant` ON `charge_calculations` (`charge_hour`,`tenant_id`);--> statement-breakpoint
DROP INDEX `ledger_one_charge_per_hour`;--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_one_charge_per_hour` ON `ledger_entries` (`charge_hour`,`tenant_id`) WHERE kind = 'charge';