CREATE TABLE "audit_digests" (
	"company_id" integer NOT NULL,
	"date" date NOT NULL,
	"seq" bigint NOT NULL,
	"hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "audit_digests_company_id_date_pk" PRIMARY KEY("company_id","date")
);
--> statement-breakpoint
ALTER TABLE "audit_logs" ADD COLUMN "seq" bigint;--> statement-breakpoint
ALTER TABLE "audit_logs" ADD COLUMN "prev_hash" text;--> statement-breakpoint
ALTER TABLE "audit_logs" ADD COLUMN "hash" text;--> statement-breakpoint
ALTER TABLE "audit_logs" ADD COLUMN "sealed_at" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "audit_company_seq" ON "audit_logs" USING btree ("company_id","seq") WHERE seq is not null;--> statement-breakpoint
CREATE INDEX "audit_unsealed" ON "audit_logs" USING btree ("company_id","id") WHERE seq is null and company_id is not null;