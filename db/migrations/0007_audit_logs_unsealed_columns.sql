DROP INDEX "audit_company_seq";--> statement-breakpoint
DROP INDEX "audit_unsealed";--> statement-breakpoint
ALTER TABLE "audit_logs" DROP COLUMN "seq";--> statement-breakpoint
ALTER TABLE "audit_logs" DROP COLUMN "prev_hash";--> statement-breakpoint
ALTER TABLE "audit_logs" DROP COLUMN "hash";--> statement-breakpoint
ALTER TABLE "audit_logs" DROP COLUMN "sealed_at";