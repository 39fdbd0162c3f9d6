-- Custom SQL migration file, put your code below! --
-- Places already handed out move beside their rows unchanged (same seq, prev_hash, hash, sealed_at), so chains and
-- the digests kept from them still verify; rows not yet sealed wait in audit_pending like new ones.
INSERT INTO "audit_seals" ("audit_id", "company_id", "seq", "prev_hash", "hash", "sealed_at")
SELECT "id", "company_id", "seq", "prev_hash", "hash", "sealed_at" FROM "audit_logs" WHERE "seq" IS NOT NULL;
--> statement-breakpoint
INSERT INTO "audit_pending" ("company_id", "audit_id")
SELECT "company_id", "id" FROM "audit_logs" WHERE "seq" IS NULL AND "company_id" IS NOT NULL;
