import { t } from 'elysia'

export const MonitoringModel = {
  alive: t.Object({ status: t.Literal('ok') }),
  ready: t.Object({ status: t.Literal('ready') }),
  metrics: t.String({ description: 'Prometheus text exposition format 0.0.4 (`text/plain; version=0.0.4`)' }),
}
