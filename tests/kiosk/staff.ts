/** The counter console (/staff) as its end-to-end suites start it. */
import type { Page } from 'playwright-core'

/**
 * Signs `email` in at /staff of the company, sits at `desk` serving every service, and waits for queue A; the two
 * waits that follow a round trip take `timeout` (Playwright's own when left out).
 */
export async function startAtCounter(page: Page, at: { base: string; companyId: number }, email: string, password: string, desk: string, timeout?: number) {
  await page.goto(`${at.base}/staff?empresa=${at.companyId}`)
  await page.fill('input[name=email]', email)
  await page.fill('input[name=password]', password)
  await page.keyboard.press('Enter')
  await page.fill('input[name=desk]', desk, { timeout })
  for (const box of await page.locator('input[type=checkbox]').all()) await box.check()
  await page.getByRole('button', { name: 'Comenzar' }).click()
  await page.getByTestId('queue-A').waitFor({ timeout })
}
