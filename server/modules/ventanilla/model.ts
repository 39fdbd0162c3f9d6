import { t } from 'elysia'
import { closed, DateTime, MoneyOut } from '../../lib/models'
import { MONEY_LIMIT } from '../../lib/money'

const privacyMode = t.Union([t.Literal('full_name'), t.Literal('first_last_initial'), t.Literal('ticket')], {
  description:
    'How customer names appear on the public screen: `full_name` as given, `first_last_initial` ("Juan P."; a Spanish name is read as given names then surnames, particles such as "de la" joined to the next word: four or more parts show two given names and the first surname\'s initial, "María José González Fernández de la Torre" → "María José G."; three show one given name), `ticket` (no name). Shortened on the server: the full name never reaches the screen in the other modes.',
})
const priorityMode = t.Union([t.Literal('first'), t.Literal('off')], {
  description: '`first` (default): waiting priority tickets are called before the others, each group oldest first; `off`: arrival order only.',
})
const dispenserAsksName = t.Union([t.Literal('off'), t.Literal('optional'), t.Literal('required')], {
  description: 'Whether the dispenser asks for the customer\'s name: `off` (default), `optional`, `required` (a ticket without one → 400).',
})
/**
 * A rate as a JSON number or a decimal string. The string's form is checked by the service, so that "1234,5" gets a
 * message saying to use a dot rather than a schema's pattern.
 */
const rateValue = t.Union([t.Number({ minimum: 0, exclusiveMaximum: MONEY_LIMIT }), t.String({ maxLength: 40, pattern: '^(?!-)' })], {
  description: 'Exact decimal: a JSON number or a decimal string with a dot (`"1234.5"`), not negative; stored with 6 decimal places.',
})
const logoUrl = t.String({ maxLength: 2000, description: 'Empty, an https URL, or a same-origin path (`/…`); anything else → 400' })
const settingsFields = {
  displayName: t.Union([t.String({ maxLength: 200 }), t.Null()], { description: 'Shown instead of the company name; omitted or null → the company name' }),
  logoUrl,
  showLogo: t.Boolean(),
  timezone: t.String({ minLength: 1, maxLength: 64, description: 'IANA time zone name' }),
  tickerText: t.String({ maxLength: 2000, description: 'Empty: no ticker' }),
  announceSound: t.Boolean(),
  announceTts: t.Boolean(),
  privacyMode,
  priorityMode,
  dispenserAsksName,
}
const serviceId = t.Integer({ minimum: 1, maximum: 2147483647 })
const prefix = t.String({ pattern: '^[A-Za-z0-9]{1,4}$', maxLength: 4, description: '1–4 letters or digits; stored upper case. Ticket numbers are `<prefix>-NNN`.' })
const desk = t.String({ minLength: 1, maxLength: 40, description: 'Where the customer goes, e.g. "Caja 2".' })

const call = t.Object({
  ticket: t.String({ description: 'Ticket number, e.g. `A-042`' }),
  name: t.Union([t.String(), t.Null()], { description: 'Customer name masked by `privacyMode`; null in `ticket` mode or when none was given' }),
  desk: t.String(),
  service: t.String({ description: 'Service name' }),
  calledAt: DateTime,
})

export const VentanillaModel = {
  settings: t.Object({
    displayName: t.Union([t.String(), t.Null()]),
    logoUrl: t.String(),
    showLogo: t.Boolean(),
    timezone: t.String(),
    tickerText: t.String(),
    announceSound: t.Boolean(),
    announceTts: t.Boolean(),
    privacyMode,
    priorityMode,
    dispenserAsksName,
  }),
  settingsPut: closed(
    t.Object({
      ...settingsFields,
      displayName: t.Optional(settingsFields.displayName),
      priorityMode: t.Optional(priorityMode),
      dispenserAsksName: t.Optional(dispenserAsksName),
    }),
  ),
  settingsPatch: closed(t.Partial(t.Object(settingsFields))),
  ratesPut: t.Object(
    {
      rates: t.Array(
        t.Object(
          {
            currency: t.String({ pattern: '^[A-Za-z0-9]{1,10}$', maxLength: 10, description: 'Currency code; stored upper case' }),
            buy: rateValue,
            sell: rateValue,
          },
          { additionalProperties: false },
        ),
        { maxItems: 50 },
      ),
    },
    { additionalProperties: false },
  ),
  rates: t.Object({
    rates: t.Array(t.Object({ currency: t.String(), buy: MoneyOut(), sell: MoneyOut(), mid: MoneyOut('(buy + sell) / 2, exact') })),
  }),
  ratesRead: t.Object({
    rates: t.Array(t.Object({ currency: t.String(), buy: MoneyOut(), sell: MoneyOut(), mid: MoneyOut('(buy + sell) / 2, exact') })),
    updated_at: t.Union([DateTime, t.Null()], { description: 'When the board was last replaced; null if never' }),
    updated_by: t.Union([t.String(), t.Null()], { description: 'The employee who replaced it; null for a key (or never)' }),
  }),
  ticketUpdate: closed(t.Object({ customer_name: t.Union([t.String({ maxLength: 200 }), t.Null()], { description: 'Empty or null clears it' }) })),
  serviceCreate: t.Object({ name: t.String({ minLength: 1, maxLength: 100 }), prefix }, { additionalProperties: false }),
  serviceUpdate: t.Object({ name: t.Optional(t.String({ minLength: 1, maxLength: 100 })), prefix: t.Optional(prefix) }, { additionalProperties: false }),
  service: t.Object({ id: t.Integer(), name: t.String(), prefix: t.String(), created_at: DateTime, updated_at: DateTime }),
  tokenCreate: t.Object({ name: t.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
  issuedToken: t.Object({
    id: t.Integer(),
    name: t.String(),
    token: t.String({ description: 'Shown only here' }),
    kiosk_url: t.String({ description: 'The kiosk page for this token' }),
  }),
  token: t.Object({ id: t.Integer(), name: t.String(), prefix: t.String(), created_at: DateTime }),
  ticketCreate: t.Object(
    {
      service_id: serviceId,
      customer_name: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])),
      priority: t.Optional(t.Boolean({ default: false, description: 'Called before the others while `priorityMode` is `first`' })),
    },
    { additionalProperties: false },
  ),
  callCreate: t.Object(
    { desk, service_id: t.Optional(t.Integer({ minimum: 1, maximum: 2147483647, description: 'Only tickets of this service' })) },
    { additionalProperties: false },
  ),
  recall: t.Object({ desk }, { additionalProperties: false }),
  ticket: t.Object({
    id: t.Integer(),
    number: t.String({ description: '`<prefix>-NNN`, restarting at 001 each local day per service' }),
    service_id: t.Integer(),
    customer_name: t.Union([t.String(), t.Null()]),
    status: t.Union([t.Literal('waiting'), t.Literal('called'), t.Literal('finished'), t.Literal('no_show')]),
    priority: t.Boolean(),
    desk: t.Union([t.String(), t.Null()]),
    called_at: t.Union([DateTime, t.Null()]),
    created_at: DateTime,
    updated_at: DateTime,
  }, { $id: 'VentanillaTicket' }),
  transfer: t.Object({ service_id: serviceId }, { additionalProperties: false }),
  queue: t.Object({
    data: t.Array(
      t.Object({
        service_id: t.Integer(),
        name: t.String(),
        prefix: t.String(),
        waiting: t.Array(
          t.Object({ id: t.Integer(), number: t.String(), customer_name: t.Union([t.String(), t.Null()]), priority: t.Boolean(), created_at: DateTime }),
          { description: 'In the order they will be called' },
        ),
      }),
    ),
    serving: t.Array(
      t.Object({
        desk: t.String(),
        ticket: t.Object({ id: t.Integer(), number: t.String(), customer_name: t.Union([t.String(), t.Null()]), service_id: t.Integer() }),
        employee: t.Union([t.Object({ id: t.Integer(), name: t.String() }), t.Null()], { description: 'Who called it; null when a key did' }),
        called_at: DateTime,
      }),
      { description: 'Tickets called and not yet finished or no-show, one per desk (its latest call), by desk' },
    ),
  }),
  statsQuery: t.Object({
    from: t.Optional(t.String({ format: 'date', maxLength: 10, description: 'First day (company time zone), default today' })),
    to: t.Optional(t.String({ format: 'date', maxLength: 10, description: 'Last day, inclusive, default today' })),
    format: t.Optional(t.Union([t.Literal('json'), t.Literal('csv')], { description: '`csv`: the same rows as `text/csv` with a header line' })),
  }),
  stats: t.Object({
    data: t.Array(
      t.Object({
        date: t.String({ description: 'Day the tickets were taken, company time zone' }),
        service_id: t.Integer(),
        service_name: t.String(),
        issued: t.Integer(),
        served: t.Integer({ description: 'Finished' }),
        no_show: t.Integer(),
        avg_wait_s: t.Union([t.Number(), t.Null()], { description: 'First call − taken, whole seconds; null when none was called' }),
        p90_wait_s: t.Union([t.Number(), t.Null()]),
        avg_service_s: t.Union([t.Number(), t.Null()], { description: 'Finish − last call of finished tickets' }),
      }),
    ),
  }),
  issuedDispenserToken: t.Object({
    id: t.Integer(),
    name: t.String(),
    token: t.String({ description: 'Shown only here' }),
    dispenser_url: t.String({ description: 'The dispenser page for this token' }),
  }),
  dispenserTicketCreate: t.Object(
    {
      service_id: serviceId,
      priority: t.Optional(t.Boolean({ default: false })),
      customer_name: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()], { description: 'Asked when `dispenserAsksName` is `optional` or `required`; ignored when `off`' })),
    },
    { additionalProperties: false },
  ),
  dispensedTicket: t.Object({
    number: t.String(),
    service: t.String({ description: 'Service name' }),
    priority: t.Boolean(),
    waiting_ahead: t.Integer({ description: 'Waiting tickets of the service that will be called before this one' }),
  }),
  dispenser: t.Object({
    companyName: t.String(),
    timezone: t.String({ description: 'The screen time zone, for the time printed on the ticket' }),
    priority: t.Boolean({ description: 'Whether to offer a priority ticket (`priorityMode` is `first`)' }),
    asksName: dispenserAsksName,
    services: t.Array(t.Object({ id: t.Integer(), name: t.String(), prefix: t.String() })),
  }),
  snapshot: t.Object(
    {
      companyName: t.String(),
      date: t.String({ description: 'Today in `timezone`, YYYY-MM-DD' }),
      rates: t.Array(t.Object({ currency: t.String(), buy: MoneyOut(), sell: MoneyOut(), mid: MoneyOut() })),
      services: t.Array(t.Object({ id: t.Integer(), name: t.String(), prefix: t.String(), waiting: t.Integer() })),
      currentCall: t.Union([call, t.Null()]),
      recentCalls: t.Array(call, { description: 'Up to 6 earlier calls of today, newest first' }),
      logoUrl: t.String(),
      showLogo: t.Boolean(),
      timezone: t.String(),
      tickerText: t.String(),
      announceSound: t.Boolean(),
      announceTts: t.Boolean(),
      privacyMode,
      updatedAt: DateTime,
    },
    { description: 'Waiting-room snapshot. Names are masked by the server; it never carries amounts or balances.' },
  ),
}

export type Snapshot = typeof VentanillaModel.snapshot.static
export type SnapshotCall = typeof call.static
