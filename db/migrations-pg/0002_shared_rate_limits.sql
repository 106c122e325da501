-- The per-request rate limits of several instances, in one round trip (src/platform/rate-limit.ts,
-- docs/scale-out.md): takes one request from every bucket of `limits` (a JSON array of
-- {"bucket", "interval_us", "period_us"}) or from none, GCRA as LocalRateLimiter computes it, and
-- answers 0 or the wait in µs until one more request would pass. Its commit does not wait for the
-- disk: a crash can only forget a few counted requests.
CREATE FUNCTION gpuhq_compat.rate_take(limits text, now_us bigint) RETURNS bigint
  LANGUAGE plpgsql AS $$
DECLARE
  l record;
  cur bigint;
  next_tat double precision;
  retry double precision := 0;
  tats bigint[] := '{}';
  names text[] := '{}';
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  FOR l IN SELECT e->>'bucket' AS bucket, (e->>'interval_us')::double precision AS interval_us, (e->>'period_us')::double precision AS period_us
           FROM jsonb_array_elements(limits::jsonb) AS e LOOP
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
