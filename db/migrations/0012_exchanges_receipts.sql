CREATE TABLE "exchanges" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"operation_id" integer NOT NULL,
	"side" text NOT NULL,
	"currency" text NOT NULL,
	"amount" numeric(28, 6) NOT NULL,
	"rate" numeric(28, 6) NOT NULL,
	"rate_source" text NOT NULL,
	"local_currency" text NOT NULL,
	"local_amount" numeric(28, 6) NOT NULL,
	"commission" numeric(28, 6) DEFAULT '0' NOT NULL,
	"caja_id" integer NOT NULL,
	"client_id" integer,
	"ticket_id" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "receipt_counters" (
	"company_id" integer NOT NULL,
	"point" integer NOT NULL,
	"last_seq" integer NOT NULL,
	CONSTRAINT "receipt_counters_company_id_point_pk" PRIMARY KEY("company_id","point")
);
--> statement-breakpoint
CREATE TABLE "receipts" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"operation_id" integer NOT NULL,
	"point" integer NOT NULL,
	"seq" integer NOT NULL,
	"issued_at" timestamp with time zone DEFAULT now() NOT NULL,
	"legal_name" text,
	"tax_id" text,
	"address" text,
	"license" text,
	"customer_name" text,
	"document_type" text,
	"document_number" text,
	"document_country" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "document_type" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "document_number" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "document_country" text;--> statement-breakpoint
ALTER TABLE "exchanges" ADD CONSTRAINT "exchanges_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "exchanges" ADD CONSTRAINT "exchanges_caja_id_clients_id_fk" FOREIGN KEY ("caja_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "exchanges" ADD CONSTRAINT "exchanges_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "exchanges" ADD CONSTRAINT "exchanges_ticket_id_ventanilla_tickets_id_fk" FOREIGN KEY ("ticket_id") REFERENCES "public"."ventanilla_tickets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "receipts" ADD CONSTRAINT "receipts_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "exchanges_operation" ON "exchanges" USING btree ("operation_id");--> statement-breakpoint
CREATE INDEX "exchanges_company_created" ON "exchanges" USING btree ("company_id","created_at","id");--> statement-breakpoint
CREATE INDEX "exchanges_company_caja" ON "exchanges" USING btree ("company_id","caja_id","created_at");--> statement-breakpoint
CREATE INDEX "exchanges_company_client" ON "exchanges" USING btree ("company_id","client_id") WHERE "exchanges"."client_id" is not null;--> statement-breakpoint
CREATE INDEX "exchanges_ticket" ON "exchanges" USING btree ("ticket_id") WHERE "exchanges"."ticket_id" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "receipts_number" ON "receipts" USING btree ("company_id","point","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "receipts_operation" ON "receipts" USING btree ("operation_id");--> statement-breakpoint
CREATE UNIQUE INDEX "clients_company_document_live" ON "clients" USING btree ("company_id","document_type","document_number") WHERE "clients"."deleted_at" is null and "clients"."document_number" is not null;--> statement-breakpoint
CREATE INDEX "clients_company_document_number" ON "clients" USING btree ("company_id","document_number") WHERE "clients"."deleted_at" is null and "clients"."document_number" is not null;