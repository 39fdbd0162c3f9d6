-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
-- The counter's exchanges (server/modules/exchanges/service.ts). Database functions because the session keeps the plans
-- of their statements, also behind a pooler in transaction pooling, where nothing can be prepared.

-- Everything an exchange is checked against, in one round trip, as one json object: the company's profile, the
-- board's rate of the currency, the caja and its accounts, the customer named by id and the live client holding the
-- customer's document, the operation type the side needs, the company's commission transaction type, and the ticket.
-- Rows of other companies are invisible to the tenant role (row-level security), so they read as unknown. Lookups by
-- id are by primary key alone, the company compared on the row by the caller.
CREATE OR REPLACE FUNCTION exchange_context(company integer, wanted text, caja integer, customer integer, ticket integer,
                                            doc_type text, doc_number text, type_name text)
RETURNS json
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN json_build_object(
    'company', (SELECT json_build_object('local_currency', c.local_currency, 'receipt_point', c.receipt_point, 'legal_name', c.legal_name,
                  'tax_id', c.tax_id, 'address', c.address, 'license', c.license)
                  FROM companies c WHERE c.id = company),
    'board', (SELECT json_build_object('buy', r.buy::text, 'sell', r.sell::text)
                FROM ventanilla_rates r WHERE r.company_id = company AND r.currency = wanted),
    'caja', (SELECT json_build_object('id', k.id, 'company_id', k.company_id, 'type', k.type, 'live', k.deleted_at IS NULL, 'name', k.name,
               'accounts', coalesce((SELECT json_agg(json_build_object('id', a.id, 'currency', a.currency_name) ORDER BY a.id)
                                       FROM accounts a WHERE a.client_id = k.id), '[]'))
               FROM clients k WHERE k.id = caja),
    'client', (SELECT json_build_object('id', k.id, 'company_id', k.company_id, 'type', k.type, 'live', k.deleted_at IS NULL, 'name', k.name,
                 'document_type', k.document_type, 'document_number', k.document_number, 'document_country', k.document_country)
                 FROM clients k WHERE k.id = customer),
    'holder', (SELECT json_build_object('id', k.id, 'company_id', k.company_id, 'type', k.type, 'live', true, 'name', k.name,
                 'document_type', k.document_type, 'document_number', k.document_number, 'document_country', k.document_country)
                 FROM clients k
                WHERE k.company_id = company AND k.document_type = doc_type AND k.document_number = doc_number AND k.deleted_at IS NULL
                LIMIT 1),
    'operation_type_id', (SELECT min(t.id) FROM operation_types t WHERE t.company_id = company AND t.kind = 'exchange' AND t.name = type_name),
    'commission_type_id', (SELECT min(t.id) FROM transaction_types t WHERE t.company_id = company AND t.is_commission),
    'ticket', (SELECT json_build_object('company_id', v.company_id, 'status', v.status) FROM ventanilla_tickets v WHERE v.id = ticket));
END
$$;

-- An exchange's own rows, once its operation is in (createOperation's attach): the exchange, then the next receipt
-- number of the company's point (docs/architecture.md, "Receipt numbers") and the receipt. The counter row is bumped
-- by this transaction and stays locked until it ends: a concurrent exchange of the same point waits for it, and a
-- rollback takes the bump back, so numbers have neither gaps nor repeats. Answers the receipt's sequence and issue
-- time, and the balance of the account that pays out (after the operation's own legs when it was created completed).
CREATE OR REPLACE FUNCTION exchange_record(company integer, op integer, side text, currency text, amount numeric, rate numeric,
                                           rate_source text, local_currency text, local_amount numeric, commission numeric,
                                           caja integer, customer integer, ticket integer, point integer,
                                           legal_name text, tax_id text, address text, license text,
                                           customer_name text, doc_type text, doc_number text, doc_country text,
                                           payout_account integer)
RETURNS json
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  next_seq integer;
  issued timestamptz;
  payout numeric;
BEGIN
  INSERT INTO exchanges (company_id, operation_id, side, currency, amount, rate, rate_source, local_currency, local_amount, commission,
                         caja_id, client_id, ticket_id)
  VALUES (company, op, side, currency, amount, rate, rate_source, local_currency, local_amount, commission, caja, customer, ticket);
  SELECT a.balance INTO payout FROM accounts a WHERE a.id = payout_account;
  -- Last: from here to its commit the exchange holds its point's counter, and every other exchange of it waits.
  INSERT INTO receipt_counters AS rc (company_id, point, last_seq) VALUES (company, point, 1)
    ON CONFLICT ON CONSTRAINT receipt_counters_company_id_point_pk DO UPDATE SET last_seq = rc.last_seq + 1
    RETURNING rc.last_seq INTO next_seq;
  INSERT INTO receipts (company_id, operation_id, point, seq, legal_name, tax_id, address, license,
                        customer_name, document_type, document_number, document_country)
  VALUES (company, op, point, next_seq, legal_name, tax_id, address, license, customer_name, doc_type, doc_number, doc_country)
  RETURNING receipts.issued_at INTO issued;
  RETURN json_build_object('seq', next_seq, 'issued_at', to_char(issued AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                           'payout_balance', payout::text);
END
$$;
