import { Elysia } from 'elysia'
import type { AppContext } from './context'
import { telemetryOf } from './infra/telemetry'
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
import { webhookDocument } from './modules/webhooks/model'
import { setupModule } from './modules/setup'
import { companyModule } from './modules/company'
import { exchangesModule } from './modules/exchanges'
import { tillsModule } from './modules/tills'
import { receiptPage } from './modules/exchanges/page'
import { monitoringModule } from './modules/monitoring'

/** Builds the whole service from its dependencies; listening is the caller's business. */
export function createApp(app: AppContext) {
  // The routes, for the 405 answer: read once the app is built.
  let routes: () => { method: string; path: string }[] = () => []
  // Metrics on: the plugins below tell it what they see; off, they are given nothing and do nothing more.
  const telemetry = telemetryOf(app)
  const built = new Elysia()
    .use(requestLog((entry) => app.log(entry), telemetry && ((route, method, status, s) => telemetry.observeRequest(route, method, status, s))))
    .use(cors(app.config.corsOrigins))
    .use(
      addressLimit({
        max: app.config.maxRequestsPerAddress,
        trustProxy: app.config.trustProxy,
        limits: requestLimits(app),
        refused: telemetry && (() => telemetry.rateLimited.inc({ limit: 'in_progress' })),
      }),
    )
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
    .use(errors((entry) => app.log(entry), telemetry && ((cause) => telemetry.unavailable.inc({ cause }))))
    .use(rateLimit(requestLimits(app)))
    // Before the docs, so the OpenAPI document is tagged like every other JSON answer.
    .use(etag())
    .use(docs(app.config.publicBaseUrl, webhookDocument()))
    .use(monitoringModule(app))
    .use(superadmin(app))
    .use(setupModule(app))
    .use(sessionsModule(app))
    .use(employeesModule(app))
    .use(companyModule(app))
    .use(clientsModule(app))
    .use(auditModule(app))
    .use(operationsModule(app))
    .use(exchangesModule(app))
    .use(tillsModule(app))
    .use(receiptPage(app))
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
