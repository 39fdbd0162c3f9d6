DROP INDEX "sign_in_failures_address";--> statement-breakpoint
ALTER TABLE "sign_in_failures" ADD COLUMN "device" text;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "principal" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "sign_in_failures_device" ON "sign_in_failures" USING btree ("device","failed_at") WHERE "sign_in_failures"."device" is not null;--> statement-breakpoint
CREATE INDEX "operation_attachments_storage" ON "operation_attachments" USING btree ("company_id","size_bytes") WHERE "operation_attachments"."deleted_at" is null;