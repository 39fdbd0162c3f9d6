CREATE TABLE "till_movements" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"session_id" integer NOT NULL,
	"operation_id" integer NOT NULL,
	"event" text NOT NULL,
	"moved" boolean NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "till_sessions" (
	"id" serial PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"caja_id" integer NOT NULL,
	"status" text NOT NULL,
	"opened_at" timestamp with time zone NOT NULL,
	"opened_by" integer,
	"opening" jsonb NOT NULL,
	"opening_adjustment_operation_id" integer,
	"closed_at" timestamp with time zone,
	"closed_by" integer,
	"closing" jsonb,
	"closing_adjustment_operation_id" integer,
	"summary" jsonb,
	"note" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "till_states" (
	"caja_id" integer PRIMARY KEY NOT NULL,
	"company_id" integer NOT NULL,
	"session_id" integer,
	"open" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "till_movements" ADD CONSTRAINT "till_movements_session_id_till_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."till_sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "till_movements" ADD CONSTRAINT "till_movements_operation_id_operations_id_fk" FOREIGN KEY ("operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "till_sessions" ADD CONSTRAINT "till_sessions_caja_id_clients_id_fk" FOREIGN KEY ("caja_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "till_sessions" ADD CONSTRAINT "till_sessions_opening_adjustment_operation_id_operations_id_fk" FOREIGN KEY ("opening_adjustment_operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "till_sessions" ADD CONSTRAINT "till_sessions_closing_adjustment_operation_id_operations_id_fk" FOREIGN KEY ("closing_adjustment_operation_id") REFERENCES "public"."operations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "till_states" ADD CONSTRAINT "till_states_caja_id_clients_id_fk" FOREIGN KEY ("caja_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "till_states" ADD CONSTRAINT "till_states_session_id_till_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."till_sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "till_movements_session" ON "till_movements" USING btree ("session_id","operation_id");--> statement-breakpoint
CREATE INDEX "till_sessions_caja_opened" ON "till_sessions" USING btree ("company_id","caja_id","opened_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "till_sessions_one_open" ON "till_sessions" USING btree ("caja_id") WHERE "till_sessions"."status" = 'open';--> statement-breakpoint
-- Data, added by hand: every caja made before this migration gets its till row, never opened (db/sql/tills.sql makes
-- the row of every caja made from here on).
INSERT INTO "till_states" ("caja_id", "company_id") SELECT "id", "company_id" FROM "clients" WHERE "type" = 0;
