-- Failures counted by e-mail alone have no company or address to carry over; they only ever counted for 15 minutes.
DELETE FROM "sign_in_failures";--> statement-breakpoint
DROP INDEX "sign_in_failures_email";--> statement-breakpoint
ALTER TABLE "sign_in_failures" ADD COLUMN "company_id" integer NOT NULL;--> statement-breakpoint
ALTER TABLE "sign_in_failures" ADD COLUMN "address" text NOT NULL;--> statement-breakpoint
CREATE INDEX "sign_in_failures_account" ON "sign_in_failures" USING btree ("company_id","email","failed_at");--> statement-breakpoint
CREATE INDEX "sign_in_failures_address" ON "sign_in_failures" USING btree ("address","failed_at");