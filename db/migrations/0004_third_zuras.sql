CREATE TABLE "employee_sessions" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"employee_id" integer NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "sign_in_failures" (
	"id" serial PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"failed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ventanilla_dispenser_tokens" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"token_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
DROP INDEX "ventanilla_tickets_service_day_seq";--> statement-breakpoint
ALTER TABLE "employees" ADD COLUMN "password_hash" text;--> statement-breakpoint
ALTER TABLE "ventanilla_settings" ADD COLUMN "priority_mode" text DEFAULT 'first' NOT NULL;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD COLUMN "issued_service_id" integer;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD COLUMN "priority" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD COLUMN "first_called_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD COLUMN "finished_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD COLUMN "dispenser_token_id" integer;--> statement-breakpoint
ALTER TABLE "employee_sessions" ADD CONSTRAINT "employee_sessions_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "employee_sessions" ADD CONSTRAINT "employee_sessions_employee_id_employees_id_fk" FOREIGN KEY ("employee_id") REFERENCES "public"."employees"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_dispenser_tokens" ADD CONSTRAINT "ventanilla_dispenser_tokens_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "employee_sessions_token" ON "employee_sessions" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "employee_sessions_employee" ON "employee_sessions" USING btree ("employee_id");--> statement-breakpoint
CREATE INDEX "sign_in_failures_email" ON "sign_in_failures" USING btree ("email","failed_at");--> statement-breakpoint
CREATE UNIQUE INDEX "ventanilla_dispenser_tokens_prefix" ON "ventanilla_dispenser_tokens" USING btree ("prefix");--> statement-breakpoint
CREATE INDEX "ventanilla_dispenser_tokens_company" ON "ventanilla_dispenser_tokens" USING btree ("company_id");--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD CONSTRAINT "ventanilla_tickets_issued_service_id_ventanilla_services_id_fk" FOREIGN KEY ("issued_service_id") REFERENCES "public"."ventanilla_services"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "ventanilla_tickets_issuer_day_seq" ON "ventanilla_tickets" USING btree (coalesce("issued_service_id", "service_id"),"local_date","seq");--> statement-breakpoint
CREATE INDEX "ventanilla_tickets_dispenser" ON "ventanilla_tickets" USING btree ("dispenser_token_id","created_at") WHERE "ventanilla_tickets"."dispenser_token_id" is not null;