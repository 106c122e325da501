-- What the SQLite schema's hand-written migrations do, for PostgreSQL, and the few SQLite functions
-- the statements use under their SQLite names (db/pg/compat.ts says why they are emulated here
-- rather than rewritten). The connection's search_path is `public, gpuhq_compat, pg_catalog`, so
-- these come before the built-ins of the same name and signature.
CREATE SCHEMA IF NOT EXISTS gpuhq_compat;
--> statement-breakpoint
-- SQLite's two-argument min() and max() are scalar: PostgreSQL's least() and greatest().
CREATE FUNCTION gpuhq_compat.min(a anycompatible, b anycompatible) RETURNS anycompatible
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT least(a, b) $$;
--> statement-breakpoint
CREATE FUNCTION gpuhq_compat.max(a anycompatible, b anycompatible) RETURNS anycompatible
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT greatest(a, b) $$;
--> statement-breakpoint
-- sum() of integers is an integer in SQLite (PostgreSQL widens it to numeric, which arrives as text).
CREATE AGGREGATE gpuhq_compat.sum(bigint) (SFUNC = int8pl, STYPE = bigint, COMBINEFUNC = int8pl, PARALLEL = SAFE);
--> statement-breakpoint
-- json_each(?) over a JSON array of integers (the series ids a metrics query reads): one row per element.
CREATE FUNCTION gpuhq_compat.json_each(doc text) RETURNS TABLE (key integer, value bigint)
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (ord - 1)::integer, elem::bigint FROM jsonb_array_elements_text(doc::jsonb) WITH ORDINALITY AS e(elem, ord) $$;
--> statement-breakpoint
-- SQLite's percentile_cont(value, fraction) is a plain aggregate; PostgreSQL's is ordered-set.
CREATE FUNCTION gpuhq_compat.percentile_step(state double precision[], v double precision, p double precision) RETURNS double precision[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CASE WHEN v IS NULL THEN coalesce(state, ARRAY[p]) ELSE coalesce(state, ARRAY[p]) || v END $$;
--> statement-breakpoint
CREATE FUNCTION gpuhq_compat.percentile_final(state double precision[]) RETURNS double precision
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT pg_catalog.percentile_cont(state[1]) WITHIN GROUP (ORDER BY x) FROM unnest(state[2:]) AS x $$;
--> statement-breakpoint
CREATE AGGREGATE gpuhq_compat.percentile_cont(double precision, double precision) (SFUNC = gpuhq_compat.percentile_step, STYPE = double precision[], FINALFUNC = gpuhq_compat.percentile_final);
--> statement-breakpoint
-- The ledger and the command timeline are append-only (SQLite migrations 0007 and 0009).
CREATE FUNCTION gpuhq_compat.append_only() RETURNS trigger
  LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation'; END $$;
--> statement-breakpoint
CREATE TRIGGER command_timeline_no_update BEFORE UPDATE ON command_timeline FOR EACH ROW EXECUTE FUNCTION gpuhq_compat.append_only();
--> statement-breakpoint
CREATE TRIGGER command_timeline_no_delete BEFORE DELETE ON command_timeline FOR EACH ROW EXECUTE FUNCTION gpuhq_compat.append_only();
--> statement-breakpoint
CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries FOR EACH ROW EXECUTE FUNCTION gpuhq_compat.append_only();
--> statement-breakpoint
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries FOR EACH ROW EXECUTE FUNCTION gpuhq_compat.append_only();
--> statement-breakpoint
-- The plan catalogue of decisions.md (SQLite migration 0003).
INSERT INTO plans (code, label, price_micros_per_server_month, servers_max, features, upgrade_effective, downgrade_effective, position, updated_at) VALUES
  ('free', 'Free', 0, 1, '[]', 'same_day', 'next_month', 1, 0),
  ('starter', 'Starter', 2000000, 10, '[]', 'same_day', 'next_month', 2, 0),
  ('pro', 'Pro', 4000000, NULL, '["strategy","ai_access"]', 'same_day', 'next_month', 3, 0),
  ('enterprise', 'Enterprise', NULL, NULL, '["strategy","ai_access"]', 'same_day', 'next_month', 4, 0);
