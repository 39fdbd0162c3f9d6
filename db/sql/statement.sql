-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change.
-- Statement exports are written by the database as finished text (server/modules/exports/statement.ts), so the
-- server forwards chunks instead of parsing and re-serialising every row on its one event loop. The text must be
-- byte for byte what the server writes itself: JSON money as server/lib/money.ts writes it, CSV cells as csv.ts quotes.

-- Money in a JSON statement is the numeric's own text (trim_scale), every digit as stored; the doubles' printing
-- once emulated here is gone with the float it imitated.
DROP FUNCTION IF EXISTS statement_js_number(numeric);
DROP FUNCTION IF EXISTS statement_js_number_slow(numeric);

-- One CSV cell of free text: formula-safe (a leading apostrophe before = + - @ tab CR) and quoted per RFC 4180
-- when it holds a comma, quote, CR or LF (csv.ts safeText and csvField).
CREATE OR REPLACE FUNCTION statement_csv_text(v text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN v ~ '[",\r\n]'
    THEN '"' || CASE WHEN v ~ '^[=+\-@\t\r]' THEN '''' ELSE '' END || replace(v, '"', '""') || '"'
    ELSE CASE WHEN v ~ '^[=+\-@\t\r]' THEN '''' ELSE '' END || v END
$$;
