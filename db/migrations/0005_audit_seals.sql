CREATE TABLE "audit_pending" (
	"company_id" integer NOT NULL,
	"audit_id" bigint NOT NULL,
	CONSTRAINT "audit_pending_company_id_audit_id_pk" PRIMARY KEY("company_id","audit_id")
);
--> statement-breakpoint
CREATE TABLE "audit_seals" (
	"audit_id" bigint PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"seq" bigint NOT NULL,
	"prev_hash" text NOT NULL,
	"hash" text NOT NULL,
	"sealed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "audit_seals_company_seq" ON "audit_seals" USING btree ("company_id","seq");