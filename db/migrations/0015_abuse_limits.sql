-- Reordered by hand: the idempotency key's new primary key names `principal`, so the column comes first (as
-- generated, the key was changed before the column existed). Existing claims become the company's own (principal 0).
DROP INDEX "sign_in_failures_address";--> statement-breakpoint
ALTER TABLE "sign_in_failures" ADD COLUMN "device" text;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "principal" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_keys" DROP CONSTRAINT "idempotency_keys_company_id_key_pk";--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_company_id_principal_key_pk" PRIMARY KEY("company_id","principal","key");--> statement-breakpoint
CREATE INDEX "sign_in_failures_device" ON "sign_in_failures" USING btree ("device","failed_at") WHERE "sign_in_failures"."device" is not null;--> statement-breakpoint
CREATE INDEX "operation_attachments_storage" ON "operation_attachments" USING btree ("company_id","size_bytes") WHERE "operation_attachments"."deleted_at" is null;
