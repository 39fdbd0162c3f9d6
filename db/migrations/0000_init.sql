CREATE TABLE "api_keys" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"employee_id" integer,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"key_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "companies" (
	"id" serial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"timezone" text DEFAULT 'America/Argentina/Buenos_Aires' NOT NULL,
	"mesas_enabled" boolean DEFAULT false NOT NULL,
	"ventanilla_enabled" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "employees" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"email" text NOT NULL,
	"name" text NOT NULL,
	"permissions" text[] DEFAULT '{}'::text[] NOT NULL,
	"client_ids" integer[] DEFAULT '{}'::integer[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "accounts" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"client_id" integer NOT NULL,
	"name" text NOT NULL,
	"currency_name" text NOT NULL,
	"balance" numeric(28, 6) DEFAULT '0' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "client_tags" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"client_id" integer NOT NULL,
	"tag_id" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "clients" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"type" smallint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "tags" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"name" text NOT NULL,
	"color" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "operation_types" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "operations" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"operation_type_id" integer NOT NULL,
	"client_id" integer,
	"cost_center_id" integer,
	"description" text DEFAULT '' NOT NULL,
	"date" timestamp with time zone DEFAULT now() NOT NULL,
	"status" text NOT NULL,
	"created_by" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "transaction_types" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"name" text NOT NULL,
	"is_commission" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "transactions" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"operation_id" integer NOT NULL,
	"account_id" integer NOT NULL,
	"currency" text NOT NULL,
	"amount" numeric(28, 6) NOT NULL,
	"status" text NOT NULL,
	"transaction_type_id" integer,
	"is_commission" boolean DEFAULT false NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"completed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_logs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"company_id" integer,
	"entity" text NOT NULL,
	"entity_id" integer NOT NULL,
	"action" text NOT NULL,
	"raw_action" text NOT NULL,
	"actor_email" text,
	"channel" text,
	"channel_detail" jsonb,
	"before" jsonb,
	"after" jsonb,
	"changes" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"company_id" integer NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"status" smallint NOT NULL,
	"response" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_company_id_key_pk" PRIMARY KEY("company_id","key")
);
--> statement-breakpoint
CREATE TABLE "mesa_accounts" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"mesa_id" integer NOT NULL,
	"account_id" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"released_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "mesa_lines" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"mesa_id" integer NOT NULL,
	"operation_id" integer,
	"side" text NOT NULL,
	"local_amount" numeric(28, 6) NOT NULL,
	"quote_amount" numeric(28, 6) NOT NULL,
	"fx" numeric(40, 12) NOT NULL,
	"source" text NOT NULL,
	"match_kind" text,
	"traded_at" timestamp with time zone NOT NULL,
	"created_by" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mesas" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"name" text NOT NULL,
	"local_currency" text NOT NULL,
	"quote_currency" text NOT NULL,
	"costing_method" text NOT NULL,
	"quote_direction" text DEFAULT 'quote' NOT NULL,
	"blotter_feed_mode" text DEFAULT 'manual' NOT NULL,
	"include_pending_legs" boolean DEFAULT false NOT NULL,
	"created_by" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "ventanilla_rates" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"currency" text NOT NULL,
	"buy" numeric(28, 6) NOT NULL,
	"sell" numeric(28, 6) NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ventanilla_services" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "ventanilla_settings" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"display_name" text,
	"logo_url" text DEFAULT '' NOT NULL,
	"show_logo" boolean DEFAULT false NOT NULL,
	"timezone" text,
	"ticker_text" text DEFAULT '' NOT NULL,
	"announce_sound" boolean DEFAULT true NOT NULL,
	"announce_tts" boolean DEFAULT true NOT NULL,
	"privacy_mode" text DEFAULT 'first_last_initial' NOT NULL,
	"rates_updated_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ventanilla_tickets" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"service_id" integer NOT NULL,
	"number" text NOT NULL,
	"seq" integer NOT NULL,
	"local_date" date NOT NULL,
	"customer_name" text,
	"status" text DEFAULT 'waiting' NOT NULL,
	"desk" text,
	"called_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ventanilla_tokens" (
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
CREATE TABLE "operation_attachments" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"operation_id" integer NOT NULL,
	"object_key" text NOT NULL,
	"file_name" text NOT NULL,
	"mime_type" text,
	"size_bytes" bigint,
	"uploaded_by_email" text,
	"uploaded_by_id" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "operation_attachments_object_key_unique" UNIQUE("object_key")
);
--> statement-breakpoint
CREATE TABLE "cost_center_budgets" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"cost_center_id" integer NOT NULL,
	"currency" text NOT NULL,
	"year" integer NOT NULL,
	"period" smallint NOT NULL,
	"amount" numeric(28, 6) NOT NULL,
	"kind" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "cost_center_budgets_period" CHECK ("cost_center_budgets"."period" between 1 and 12)
);
--> statement-breakpoint
CREATE TABLE "cost_centers" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"client_id" integer NOT NULL,
	"name" text NOT NULL,
	"default_currency" text NOT NULL,
	"default_internal_account_id" integer,
	"net_balance_by_default" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messaging_drafts" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"tool_id" integer NOT NULL,
	"operation_id" integer NOT NULL,
	"channel" text NOT NULL,
	"requested_by" jsonb NOT NULL,
	"channel_detail" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messaging_tools" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"company_operation_type_id" integer NOT NULL,
	"mode" text DEFAULT 'standard' NOT NULL,
	"fixed_config" jsonb NOT NULL,
	"parameter_schema" jsonb NOT NULL,
	"created_by" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "external_grants" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"client_id" integer NOT NULL,
	"prefix" text NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone,
	"created_by" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_employee_id_employees_id_fk" FOREIGN KEY ("employee_id") REFERENCES "public"."employees"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "employees" ADD CONSTRAINT "employees_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "client_tags" ADD CONSTRAINT "client_tags_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "client_tags" ADD CONSTRAINT "client_tags_tag_id_tags_id_fk" FOREIGN KEY ("tag_id") REFERENCES "public"."tags"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "clients" ADD CONSTRAINT "clients_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "operations" ADD CONSTRAINT "operations_operation_type_id_operation_types_id_fk" FOREIGN KEY ("operation_type_id") REFERENCES "public"."operation_types"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "operations" ADD CONSTRAINT "operations_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "operations" ADD CONSTRAINT "operations_cost_center_id_cost_centers_id_fk" FOREIGN KEY ("cost_center_id") REFERENCES "public"."cost_centers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_transaction_type_id_transaction_types_id_fk" FOREIGN KEY ("transaction_type_id") REFERENCES "public"."transaction_types"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mesa_accounts" ADD CONSTRAINT "mesa_accounts_mesa_id_mesas_id_fk" FOREIGN KEY ("mesa_id") REFERENCES "public"."mesas"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mesa_accounts" ADD CONSTRAINT "mesa_accounts_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mesa_lines" ADD CONSTRAINT "mesa_lines_mesa_id_mesas_id_fk" FOREIGN KEY ("mesa_id") REFERENCES "public"."mesas"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mesa_lines" ADD CONSTRAINT "mesa_lines_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_rates" ADD CONSTRAINT "ventanilla_rates_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_services" ADD CONSTRAINT "ventanilla_services_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_settings" ADD CONSTRAINT "ventanilla_settings_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD CONSTRAINT "ventanilla_tickets_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD CONSTRAINT "ventanilla_tickets_service_id_ventanilla_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."ventanilla_services"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_tokens" ADD CONSTRAINT "ventanilla_tokens_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "operation_attachments" ADD CONSTRAINT "operation_attachments_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cost_center_budgets" ADD CONSTRAINT "cost_center_budgets_cost_center_id_cost_centers_id_fk" FOREIGN KEY ("cost_center_id") REFERENCES "public"."cost_centers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cost_centers" ADD CONSTRAINT "cost_centers_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cost_centers" ADD CONSTRAINT "cost_centers_default_internal_account_id_accounts_id_fk" FOREIGN KEY ("default_internal_account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messaging_drafts" ADD CONSTRAINT "messaging_drafts_tool_id_messaging_tools_id_fk" FOREIGN KEY ("tool_id") REFERENCES "public"."messaging_tools"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messaging_drafts" ADD CONSTRAINT "messaging_drafts_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messaging_tools" ADD CONSTRAINT "messaging_tools_company_operation_type_id_operation_types_id_fk" FOREIGN KEY ("company_operation_type_id") REFERENCES "public"."operation_types"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messaging_tools" ADD CONSTRAINT "messaging_tools_created_by_employees_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."employees"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "external_grants" ADD CONSTRAINT "external_grants_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_prefix" ON "api_keys" USING btree ("prefix");--> statement-breakpoint
CREATE INDEX "api_keys_company" ON "api_keys" USING btree ("company_id");--> statement-breakpoint
CREATE UNIQUE INDEX "employees_company_email_live" ON "employees" USING btree ("company_id",lower("email")) WHERE "employees"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "accounts_client" ON "accounts" USING btree ("client_id");--> statement-breakpoint
CREATE INDEX "accounts_company_currency" ON "accounts" USING btree ("company_id","currency_name");--> statement-breakpoint
CREATE UNIQUE INDEX "client_tags_pair" ON "client_tags" USING btree ("client_id","tag_id");--> statement-breakpoint
CREATE INDEX "client_tags_tag" ON "client_tags" USING btree ("tag_id");--> statement-breakpoint
CREATE INDEX "clients_company_name" ON "clients" USING btree ("company_id","name" collate "C","id") WHERE "clients"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "clients_company_type_name" ON "clients" USING btree ("company_id","type","name" collate "C","id") WHERE "clients"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "tags_company" ON "tags" USING btree ("company_id","name");--> statement-breakpoint
CREATE INDEX "operation_types_company" ON "operation_types" USING btree ("company_id");--> statement-breakpoint
CREATE INDEX "operations_company_date" ON "operations" USING btree ("company_id","date","id");--> statement-breakpoint
CREATE INDEX "operations_company_status" ON "operations" USING btree ("company_id","status","date");--> statement-breakpoint
CREATE INDEX "operations_company_client" ON "operations" USING btree ("company_id","client_id");--> statement-breakpoint
CREATE INDEX "transaction_types_company" ON "transaction_types" USING btree ("company_id");--> statement-breakpoint
CREATE INDEX "transactions_operation" ON "transactions" USING btree ("operation_id");--> statement-breakpoint
CREATE INDEX "transactions_account" ON "transactions" USING btree ("account_id","completed_at");--> statement-breakpoint
CREATE INDEX "transactions_company_completed" ON "transactions" USING btree ("company_id","completed_at");--> statement-breakpoint
CREATE INDEX "audit_company_time" ON "audit_logs" USING btree ("company_id","created_at","id");--> statement-breakpoint
CREATE INDEX "audit_company_entity_action_time" ON "audit_logs" USING btree ("company_id","entity","action","created_at","id");--> statement-breakpoint
CREATE INDEX "audit_company_actor_time" ON "audit_logs" USING btree ("company_id","actor_email","created_at");--> statement-breakpoint
CREATE INDEX "audit_entity_row" ON "audit_logs" USING btree ("entity","entity_id");--> statement-breakpoint
CREATE UNIQUE INDEX "mesa_accounts_live_account" ON "mesa_accounts" USING btree ("account_id") WHERE "mesa_accounts"."released_at" is null;--> statement-breakpoint
CREATE INDEX "mesa_accounts_mesa" ON "mesa_accounts" USING btree ("mesa_id");--> statement-breakpoint
CREATE UNIQUE INDEX "mesa_lines_operation" ON "mesa_lines" USING btree ("mesa_id","operation_id") WHERE "mesa_lines"."operation_id" is not null;--> statement-breakpoint
CREATE INDEX "mesa_lines_mesa_traded" ON "mesa_lines" USING btree ("mesa_id","traded_at","id");--> statement-breakpoint
CREATE INDEX "mesa_lines_operation_id" ON "mesa_lines" USING btree ("operation_id");--> statement-breakpoint
CREATE INDEX "mesas_company_live" ON "mesas" USING btree ("company_id","id") WHERE "mesas"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "mesas_company_auto" ON "mesas" USING btree ("company_id") WHERE "mesas"."deleted_at" is null and "mesas"."blotter_feed_mode" = 'auto';--> statement-breakpoint
CREATE UNIQUE INDEX "ventanilla_rates_company_currency" ON "ventanilla_rates" USING btree ("company_id","currency");--> statement-breakpoint
CREATE UNIQUE INDEX "ventanilla_services_company_prefix_live" ON "ventanilla_services" USING btree ("company_id","prefix") WHERE "ventanilla_services"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "ventanilla_services_company_updated" ON "ventanilla_services" USING btree ("company_id","updated_at");--> statement-breakpoint
CREATE UNIQUE INDEX "ventanilla_settings_company" ON "ventanilla_settings" USING btree ("company_id");--> statement-breakpoint
CREATE UNIQUE INDEX "ventanilla_tickets_service_day_seq" ON "ventanilla_tickets" USING btree ("service_id","local_date","seq");--> statement-breakpoint
CREATE INDEX "ventanilla_tickets_waiting" ON "ventanilla_tickets" USING btree ("company_id","created_at","id") WHERE "ventanilla_tickets"."status" = 'waiting';--> statement-breakpoint
CREATE INDEX "ventanilla_tickets_calls" ON "ventanilla_tickets" USING btree ("company_id","called_at") WHERE "ventanilla_tickets"."called_at" is not null;--> statement-breakpoint
CREATE INDEX "ventanilla_tickets_company_updated" ON "ventanilla_tickets" USING btree ("company_id","updated_at");--> statement-breakpoint
CREATE UNIQUE INDEX "ventanilla_tokens_prefix" ON "ventanilla_tokens" USING btree ("prefix");--> statement-breakpoint
CREATE INDEX "ventanilla_tokens_company" ON "ventanilla_tokens" USING btree ("company_id");--> statement-breakpoint
CREATE INDEX "operation_attachments_operation" ON "operation_attachments" USING btree ("company_id","operation_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "cost_center_budgets_slot" ON "cost_center_budgets" USING btree ("cost_center_id","currency","year","period","kind");--> statement-breakpoint
CREATE INDEX "cost_centers_company" ON "cost_centers" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "messaging_drafts_operation" ON "messaging_drafts" USING btree ("operation_id");--> statement-breakpoint
CREATE INDEX "messaging_drafts_tool" ON "messaging_drafts" USING btree ("tool_id");--> statement-breakpoint
CREATE UNIQUE INDEX "messaging_tools_company_slug_live" ON "messaging_tools" USING btree ("company_id","slug") WHERE "messaging_tools"."deleted_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "external_grants_prefix" ON "external_grants" USING btree ("prefix");--> statement-breakpoint
CREATE INDEX "external_grants_client" ON "external_grants" USING btree ("company_id","client_id");