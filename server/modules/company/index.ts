import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { invalid } from '../../lib/errors'
import { errors } from '../../lib/models'
import { CompanyProfileModel } from './model'
import { getProfile, updateProfile } from './service'

const detail = (summary: string, description: string) => ({ tags: ['Company'], summary, description })

/**
 * Module flags are named in the refusal rather than dropped silently with the other unknown fields (the framework
 * drops fields a schema lacks): an owner who sends them would otherwise read a 200 that changed nothing.
 */
const noModules = ({ body }: { body: unknown }) => {
  if (body && typeof body === 'object' && 'modules' in body)
    throw invalid('Module flags are switched by the platform operator (superadmin or the operator CLI), not here', [
      { field: 'modules', message: 'not a field of this body' },
    ])
}

/** The company's own profile (contract §18): what its receipts print and how its exchanges settle. */
export const companyModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .get('/company', ({ run }) => run((tx, caller) => getProfile(tx, caller)), {
      policy: { tx: 'read' },
      response: { 200: CompanyProfileModel.profile },
      detail: detail(
        "The caller's company profile",
        'Any key or signed-in employee of the company, whatever its permissions. `legal_name`, `tax_id`, `address` and `license` are null until the owner sets them; receipts print them as they are when the receipt is issued.',
      ),
    })
    .patch('/company', ({ run, body }) => run((tx, caller) => updateProfile(tx, caller, body)), {
      policy: { companyKeyOnly: true, tx: 'write' },
      transform: noModules,
      body: CompanyProfileModel.update,
      response: { 200: CompanyProfileModel.profile, ...errors(400) },
      detail: detail(
        'Change the company profile',
        [
          'Any subset of the fields; the answer is the whole profile. Bounds: `name` 1–200, `timezone` an IANA zone, `local_currency` 3 capital letters, `till_tolerance` a decimal ≥ 0, `legal_name` ≤ 200, `tax_id` ≤ 20, `address` ≤ 300, `license` ≤ 100 characters, `receipt_point` 1–99999; anything out of bounds → 400 `VALIDATION_ERROR` with `details`, and nothing changes.',
          'Texts are trimmed; null or an empty text clears a field (it reads null). A new `receipt_point` numbers the next receipts under that point, each point with its own gapless sequence.',
          '`modules` is refused (400): module flags are switched by the platform operator.',
        ].join('\n\n'),
      ),
    })
