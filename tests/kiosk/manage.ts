/**
 * The manager app (/manage) as its end-to-end suites drive it: signing in, going to a section through the menu, and
 * the check that nothing runs off the side. Each suite keeps its own timeout and password and hands them in.
 */
import { expect } from 'bun:test'
import type { Page } from 'playwright-core'

/** Signs `email` in at /manage of the company, on a clean cookie jar, with Enter, and waits for the menu. */
export async function signInToManage(page: Page, at: { base: string; companyId: number }, email: string, password: string, timeout: number) {
  await page.context().clearCookies()
  await page.goto(`${at.base}/manage?empresa=${at.companyId}`)
  await page.getByTestId('signin').waitFor({ timeout })
  await page.locator('input[name=email]').fill(email)
  await page.locator('input[name=password]').fill(password)
  await page.keyboard.press('Enter')
  await page.getByTestId('nav').waitFor({ timeout })
}

/** Opens /manage/`path` from the menu, waits for the section marked `testid`, and expects one h1 on the page. */
export async function openSection(page: Page, path: string, testid: string, timeout: number) {
  await page.locator(`nav a[href="/manage/${path}"]`).click()
  await page.getByTestId(testid).waitFor({ timeout })
  expect(await page.locator('h1').count()).toBe(1)
}

/** No sideways scrolling of the page, and no table or box scrolled sideways inside it, at 1366×768 and 1920×1080. */
export async function expectFitsSideways(page: Page) {
  for (const size of [
    { width: 1366, height: 768 },
    { width: 1920, height: 1080 },
  ]) {
    await page.setViewportSize(size)
    const problems = await page.evaluate(() => {
      const vw = document.documentElement.clientWidth
      const out: string[] = []
      if (document.documentElement.scrollWidth > vw) out.push(`page ${document.documentElement.scrollWidth} > ${vw}`)
      for (const el of Array.from(document.querySelectorAll<HTMLElement>('main *'))) {
        if (el.closest('.visually-hidden')) continue
        const r = el.getBoundingClientRect()
        if (r.width && r.right > vw + 0.5) out.push(`${el.tagName.toLowerCase()}.${el.className} right ${Math.round(r.right)} > ${vw}`)
        if (el.clientWidth && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') out.push(`${el.tagName.toLowerCase()}.${el.className} scrolls ${el.scrollWidth} > ${el.clientWidth}`)
      }
      return out.slice(0, 5)
    })
    expect(`${size.width}×${size.height}: ${problems.join('; ')}`).toBe(`${size.width}×${size.height}: `)
  }
  await page.setViewportSize({ width: 1366, height: 768 })
}
