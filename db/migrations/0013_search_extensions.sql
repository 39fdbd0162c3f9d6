-- Hand-written (drizzle-kit generate --custom): the extensions the next migration's `clients_search` index needs.
-- Both ship with Postgres's contrib package and are trusted, so the owner of the database may create them; PGlite
-- loads them at start (db/client.ts).
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gin;
