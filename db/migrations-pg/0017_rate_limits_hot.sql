-- The shared rate limit's row is updated by every counted request: with no index on a column the
-- update changes, PostgreSQL keeps it on its page (HOT), writing no index entry (SQLite 0044 drops
-- the same index). The drained-bucket sweep scans the table instead.
DROP INDEX "rate_limits_expires_at";
--> statement-breakpoint
-- rate_take (0002) with a lean path for one bucket, what every read counts: one UPDATE that takes
-- the request only when the bucket allows it (GCRA: the new theoretical arrival time no further
-- than a period ahead), so the row is locked from that UPDATE to the commit and no longer from a
-- SELECT … FOR UPDATE through an upsert. One token's concurrent requests queue on that lock
-- (docs/scale-out.md "What it costs"): in a loop of 16 concurrent calls on one bucket it answered
-- 19,000–20,000 a second at 64–70 µs of PostgreSQL's CPU each, against 9,000–10,500 and 135–153 µs.
-- Same decisions, same stored times (rounded as before), same retry: a refusal reads the bucket
-- again (its time only grows, or it was swept as drained: then it is taken afresh), and a first
-- request that meets another's insert of the same bucket goes round to the UPDATE again (a few
-- times at most, then the general path decides). Several buckets (a write: its caller and its
-- tenant) take all or none, as before.
CREATE OR REPLACE FUNCTION gpuhq_compat.rate_take(limits text, now_us bigint) RETURNS bigint
  LANGUAGE plpgsql AS $$
DECLARE
  l record;
  cur bigint;
  next_tat double precision;
  retry double precision := 0;
  tats bigint[] := '{}';
  names text[] := '{}';
  doc jsonb := limits::jsonb;
  one_bucket text;
  one_interval double precision;
  one_period double precision;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  IF jsonb_array_length(doc) = 1 THEN
    one_bucket := doc->0->>'bucket';
    one_interval := (doc->0->>'interval_us')::double precision;
    one_period := (doc->0->>'period_us')::double precision;
    -- Round again only when another request's insert or the sweep moved the row in between; a few
    -- times at most, then the general path below decides under the row's lock.
    FOR attempt IN 1 .. 3 LOOP
      UPDATE rate_limits SET tat = round(greatest(tat, now_us) + one_interval)::bigint, expires_at = round(greatest(tat, now_us) + one_interval)::bigint
        WHERE bucket = one_bucket AND greatest(tat, now_us) + one_interval - now_us <= one_period;
      IF FOUND THEN
        RETURN 0;
      END IF;
      SELECT tat INTO cur FROM rate_limits WHERE bucket = one_bucket;
      IF cur IS NOT NULL THEN
        next_tat := greatest(cur, now_us) + one_interval;
        IF next_tat - now_us > one_period THEN
          RETURN ceil(next_tat - one_period - now_us)::bigint;
        END IF;
        -- Swept or moved meanwhile so that it allows the request now: take it as above.
        CONTINUE;
      END IF;
      next_tat := now_us + one_interval;
      IF next_tat - now_us > one_period THEN
        RETURN ceil(next_tat - one_period - now_us)::bigint;
      END IF;
      INSERT INTO rate_limits (bucket, tat, expires_at) VALUES (one_bucket, round(next_tat)::bigint, round(next_tat)::bigint) ON CONFLICT (bucket) DO NOTHING;
      IF FOUND THEN
        RETURN 0;
      END IF;
    END LOOP;
  END IF;
  FOR l IN SELECT e->>'bucket' AS bucket, (e->>'interval_us')::double precision AS interval_us, (e->>'period_us')::double precision AS period_us
           FROM jsonb_array_elements(doc) AS e LOOP
    SELECT tat INTO cur FROM rate_limits WHERE bucket = l.bucket FOR UPDATE;
    next_tat := greatest(coalesce(cur, now_us), now_us) + l.interval_us;
    IF next_tat - now_us > l.period_us THEN
      retry := greatest(retry, next_tat - l.period_us - now_us);
    END IF;
    names := names || l.bucket;
    tats := tats || round(next_tat)::bigint;
  END LOOP;
  IF retry > 0 THEN
    RETURN ceil(retry)::bigint;
  END IF;
  FOR i IN 1 .. coalesce(array_length(names, 1), 0) LOOP
    INSERT INTO rate_limits (bucket, tat, expires_at) VALUES (names[i], tats[i], tats[i])
      ON CONFLICT (bucket) DO UPDATE SET tat = excluded.tat, expires_at = excluded.expires_at;
  END LOOP;
  RETURN 0;
END $$;
