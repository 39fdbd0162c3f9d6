-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
-- Shared rate limits (server/plugins/rate-limit.ts). A process takes up to `want` tokens at once from a bucket
-- that refills at `per_minute / 60` tokens a second up to `per_minute`, and spends them locally. Tokens leased
-- are spent for the bucket whether the process uses them or not, so every process together never accepts more
-- than the bucket gives out. Near empty the lease shrinks to a share of what is left, so one process cannot
-- hoard the last tokens while another is refused. Database time, so processes with skewed clocks agree.

-- Counters need no crash safety (a bucket lost in a crash is a full bucket), so no WAL either.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass('rate_limit_buckets') AND relpersistence = 'p') THEN
    ALTER TABLE rate_limit_buckets SET UNLOGGED;
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION rate_limit_take(p_bucket text, per_minute double precision, want integer,
                                           OUT granted integer, OUT remaining double precision)
LANGUAGE plpgsql AS $$
DECLARE
  rate double precision := per_minute / 60.0;
  now_ts timestamptz;
  have double precision;
  last_at timestamptz;
BEGIN
  -- A loop because another process may sweep an idle bucket between the insert and the lock.
  LOOP
    INSERT INTO rate_limit_buckets (bucket, tokens, updated_at) VALUES (p_bucket, per_minute, clock_timestamp())
      ON CONFLICT (bucket) DO NOTHING;
    SELECT b.tokens, b.updated_at INTO have, last_at FROM rate_limit_buckets b WHERE b.bucket = p_bucket FOR UPDATE;
    EXIT WHEN FOUND;
  END LOOP;
  now_ts := greatest(clock_timestamp(), last_at);
  have := least(per_minute, have + extract(epoch FROM now_ts - last_at) * rate);
  granted := CASE WHEN have < 1 THEN 0 ELSE least(want, greatest(1, floor(have / 4)::integer)) END;
  remaining := have - granted;
  UPDATE rate_limit_buckets SET tokens = remaining, updated_at = now_ts WHERE bucket = p_bucket;
END
$$;
