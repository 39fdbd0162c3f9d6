ALTER TABLE "companies" ADD COLUMN "legal_name" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "tax_id" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "address" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "license" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "receipt_point" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "local_currency" text DEFAULT 'ARS' NOT NULL;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "till_tolerance" numeric(28, 6) DEFAULT '0' NOT NULL;