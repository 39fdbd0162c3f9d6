import { Elysia, t } from 'elysia'
import { sql } from 'drizzle-orm'
import type { AppContext } from './context'
import { errors } from './plugins/errors'
import { requestLog } from './plugins/request-log'
import { rateLimit, requestLimits } from './plugins/rate-limit'
import { bodyLimit, multipartBound } from './plugins/body-limit'
import { addressLimit } from './plugins/address-limit'
import { docs } from './plugins/openapi'
import { etag } from './plugins/etag'
import { cors } from './plugins/cors'
import { methodNotAllowed } from './plugins/methods'
import { freshRefusals } from './access/policy'
import { errors as errorAnswers } from './lib/models'
import { superadmin } from './modules/superadmin'
import { employeesModule } from './modules/employees'
import { clientsModule } from './modules/clients'
import { auditModule } from './modules/audit'
import { operationsModule } from './modules/operations'
import { attachmentsModule } from './modules/attachments'
import { costCentersModule } from './modules/cost-centers'
import { messagingModule } from './modules/messaging'
import { mcpModule } from './modules/mcp'
import { kioskModule } from './modules/kiosk'
import { mesasModule } from './modules/mesas'
import { metricsModule } from './modules/metrics'
import { exportsModule } from './modules/exports'
import { ventanillaModule } from './modules/ventanilla'
import { sessionsModule } from './modules/sessions'
import { webhooksModule } from './modules/webhooks'
import { setupModule } from './modules/setup'

/** Builds the whole service from its dependencies; listening is the caller's business. */
export function createApp(app: AppContext) {
  // The routes, for the 405 answer: read once the app is built.
  let routes: () => { method: string; path: string }[] = () => []
  const built = new Elysia()
    .use(requestLog((entry) => app.log(entry)))
    .use(cors(app.config.corsOrigins))
    .use(addressLimit({ max: app.config.maxRequestsPerAddress, trustProxy: app.config.trustProxy, limits: requestLimits(app) }))
    .use(
      bodyLimit({
        maxBytes: app.config.maxJsonBytes,
        maxMultipartBytes: multipartBound(app.config.maxUploadBytes),
        maxDepth: app.config.maxJsonDepth,
        maxElements: app.config.maxJsonElements,
        timeoutMs: app.config.bodyTimeoutMs,
        maxHeadBytes: app.config.maxHeaderBytes,
      }),
    )
    .use(freshRefusals(app))
    .use(methodNotAllowed(() => routes()))
    .use(errors((entry) => app.log(entry)))
    .use(rateLimit(requestLimits(app)))
    .use(docs(app.config.publicBaseUrl))
    .use(etag())
    .get(
      '/health',
      async () => {
        await app.db.execute(sql`select 1`)
        return { status: 'ok' as const }
      },
      { response: { 200: t.Object({ status: t.Literal('ok') }), ...errorAnswers() }, detail: { tags: ['Health'], security: [], summary: 'Liveness: answers once the database does' } },
    )
    .use(superadmin(app))
    .use(setupModule(app))
    .use(sessionsModule(app))
    .use(employeesModule(app))
    .use(clientsModule(app))
    .use(auditModule(app))
    .use(operationsModule(app))
    .use(attachmentsModule(app))
    .use(costCentersModule(app))
    .use(messagingModule(app))
    .use(mcpModule(app))
    .use(mesasModule(app))
    .use(kioskModule(app))
    .use(metricsModule(app))
    .use(exportsModule(app))
    .use(ventanillaModule(app))
    .use(webhooksModule(app))
  routes = () => built.routes
  return built
}

export type App = ReturnType<typeof createApp>
