CREATE TABLE "api_key_uses" (
	"api_key_id" integer PRIMARY KEY NOT NULL,
	"last_used_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "setup_tokens" (
	"id" serial PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "setup_tokens_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
ALTER TABLE "ventanilla_settings" ADD COLUMN "rates_updated_by" integer;--> statement-breakpoint
ALTER TABLE "ventanilla_settings" ADD COLUMN "dispenser_asks_name" text DEFAULT 'off' NOT NULL;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD COLUMN "called_by" integer;--> statement-breakpoint
ALTER TABLE "api_key_uses" ADD CONSTRAINT "api_key_uses_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_settings" ADD CONSTRAINT "ventanilla_settings_rates_updated_by_employees_id_fk" FOREIGN KEY ("rates_updated_by") REFERENCES "public"."employees"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ventanilla_tickets" ADD CONSTRAINT "ventanilla_tickets_called_by_employees_id_fk" FOREIGN KEY ("called_by") REFERENCES "public"."employees"("id") ON DELETE no action ON UPDATE no action;