import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { appPage, APPS_DIST } from '../../lib/app-pages'
import { IdParams } from '../../lib/models'

/**
 * `GET /receipts/{operation id}`: the printable receipt page (contract §19), a screen app like the console. The page
 * itself signs the employee in when there is no session and reads `GET /api/operations/{id}/receipt`, so the API's
 * permission and client scope decide what it shows; this route only hands out the app. A path id that is not an id
 * is 400 `INVALID_ID`, as on every route.
 */
export const receiptPage = (_app: AppContext, dist = APPS_DIST) =>
  new Elysia({ name: 'receipt-page' }).get('/receipts/:id', () => appPage(dist, 'receipt.html'), { params: IdParams, detail: { hide: true } })
