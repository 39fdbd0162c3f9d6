-- Repeatable: applied after the migrations at every start.
-- Statement exports are written by the database as finished text (server/modules/exports/statement.ts), so the
-- server forwards chunks instead of parsing and re-serialising every row on its one event loop. The text must be
-- byte for byte what the server wrote before: JSON numbers as JavaScript prints a double, CSV cells as csv.ts quotes.

-- JavaScript's Number.prototype.toString of the double nearest to the value: its shortest digits that read back
-- as that double, in fixed notation for 1e-6 <= |x| < 1e21, else d.ddde±n. float8 prints the shortest digits
-- strictly inside the double's rounding interval; JavaScript also takes an end of the interval when the double's
-- significand is even (reading rounds half to even), so an end with fewer digits wins. Only values of more than 15
-- significant digits come here.
CREATE OR REPLACE FUNCTION statement_js_number_slow(x numeric) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT
SET extra_float_digits = 1 AS $$
DECLARE
  f float8 := abs(x::float8);
  shown text := f::text;
  mantissa text := split_part(shown, 'e', 1);
  digits text := replace(mantissa, '.', '');
  n int := length(split_part(mantissa, '.', 1)) + coalesce(nullif(split_part(shown, 'e', 2), '')::int, 0);
  bits bigint := ('x' || encode(float8send(f), 'hex'))::bit(64)::bigint;
  fraction bigint := bits & ((1::bigint << 52) - 1);
  m numeric := fraction + (1::bigint << 52);
  e int := ((bits >> 52) & 2047)::int - 1075;
  ends numeric[];
  q int;
  exact text;
  candidate text;
  k int;
  body text;
BEGIN
  IF f = 0 THEN RETURN '0'; END IF;
  n := n - (length(digits) - length(ltrim(digits, '0')));
  digits := rtrim(ltrim(digits, '0'), '0');
  IF fraction % 2 = 0 THEN
    -- The interval's ends as an integer times a power of two; below a power of two the gap is half as wide.
    ends := ARRAY[2 * m + 1, CASE WHEN fraction = 0 THEN 4 * m - 1 ELSE 2 * m - 1 END];
    FOR i IN 1..2 LOOP
      q := CASE WHEN i = 2 AND fraction = 0 THEN e - 2 ELSE e - 1 END;
      exact := trim_scale(CASE WHEN q >= 0 THEN ends[i] * 2::numeric ^ q ELSE ends[i] * 5::numeric ^ (-q) END)::text;
      candidate := rtrim(exact, '0');
      IF length(candidate) < length(digits) THEN
        digits := candidate;
        n := length(exact) + least(q, 0);
      END IF;
    END LOOP;
  END IF;
  k := length(digits);
  IF k <= n AND n <= 21 THEN
    body := digits || repeat('0', n - k);
  ELSIF 0 < n AND n <= 21 THEN
    body := left(digits, n) || '.' || substr(digits, n + 1);
  ELSIF -6 < n AND n <= 0 THEN
    body := '0.' || repeat('0', -n) || digits;
  ELSE
    body := left(digits, 1) || CASE WHEN k > 1 THEN '.' || substr(digits, 2) ELSE '' END
      || 'e' || CASE WHEN n - 1 >= 0 THEN '+' ELSE '-' END || abs(n - 1)::text;
  END IF;
  RETURN CASE WHEN x < 0 THEN '-' || body ELSE body END;
END
$$;

-- The common case inline: a value of at most 15 significant digits is its own shortest round-trip form, so its
-- trimmed decimal text is what JavaScript prints (amounts are numeric(28,6), so never below 1e-6 unless zero).
-- Not STRICT, so the planner can inline it into the export's query.
CREATE OR REPLACE FUNCTION statement_js_number(x numeric) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN length(trim_scale(x)::text) <= 15 AND (abs(x) >= 0.000001 OR x = 0) THEN trim_scale(x)::text
    ELSE statement_js_number_slow(x) END
$$;

-- One CSV cell of free text: formula-safe (a leading apostrophe before = + - @ tab CR) and quoted per RFC 4180
-- when it holds a comma, quote, CR or LF (csv.ts safeText and csvField).
CREATE OR REPLACE FUNCTION statement_csv_text(v text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN v ~ '[",\r\n]'
    THEN '"' || CASE WHEN v ~ '^[=+\-@\t\r]' THEN '''' ELSE '' END || replace(v, '"', '""') || '"'
    ELSE CASE WHEN v ~ '^[=+\-@\t\r]' THEN '''' ELSE '' END || v END
$$;
