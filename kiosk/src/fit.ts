import { onCleanup } from 'solid-js'

export interface FitOptions {
  /** Smallest font size in px; below it the text wraps at any character instead of shrinking further. */
  min?: number
  /** Largest font size in px, given the box: by default its height (one line can never be taller). */
  max?: (box: HTMLElement) => number
  /** Boxes of one group all take the smallest of their fitted sizes, so a row of buttons reads as one. */
  group?: FitGroup
}

export interface FitGroup {
  report(box: HTMLElement, size: number): void
  forget(box: HTMLElement): void
}

export function createFitGroup(): FitGroup {
  const best = new Map<HTMLElement, number>()
  const apply = () => {
    const size = Math.min(...best.values())
    for (const box of best.keys()) box.style.fontSize = `${size}px`
  }
  return {
    report(box, size) {
      best.set(box, size)
      apply()
    },
    forget(box) {
      best.delete(box)
      if (best.size) apply()
    },
  }
}

const fits = (box: HTMLElement) => box.scrollWidth <= box.clientWidth && box.scrollHeight <= box.clientHeight

/**
 * Sets `box`'s font size to the largest that lets its content fit inside it, measured in the page: the box's own
 * size must come from the layout around it (a grid track, a flex share), never from its content, and everything
 * inside is sized in `em`. Words do not break while shrinking, so a long name gets smaller before it is cut in the
 * middle; only at `min` may it break anywhere. Refits when the box is resized, when its content changes and when
 * fonts finish loading; the work runs once per animation frame however many changes arrive.
 *
 * Written here rather than taken from a fit-text library: those fit one line to a width, and these boxes hold
 * wrapped text, tables and lists that have to fit both ways at once.
 */
export function fitText(box: HTMLElement, options: FitOptions = {}) {
  const min = options.min ?? 10
  const max = options.max ?? ((b: HTMLElement) => b.clientHeight)
  let frame = 0

  const settle = (size: number) => {
    if (options.group) options.group.report(box, size)
    else box.style.fontSize = `${size}px`
  }

  const run = () => {
    frame = 0
    if (!box.isConnected || box.clientWidth === 0 || box.clientHeight === 0) return
    box.classList.remove('fit-break')
    let hi = Math.max(min, Math.floor(max(box)))
    box.style.fontSize = `${hi}px`
    if (fits(box)) return settle(hi)
    let lo = min
    box.style.fontSize = `${lo}px`
    if (!fits(box)) {
      box.classList.add('fit-break')
      return settle(lo)
    }
    // Half-pixel steps: finer is invisible, coarser wastes space on a 4K screen.
    while (hi - lo > 0.5) {
      const mid = (lo + hi) / 2
      box.style.fontSize = `${mid}px`
      if (fits(box)) lo = mid
      else hi = mid
    }
    settle(lo)
  }
  const schedule = () => {
    if (!frame) frame = requestAnimationFrame(run)
  }

  const resized = new ResizeObserver(schedule)
  resized.observe(box)
  // Only content changes: the font size written above is an attribute change and must not start another round.
  const changed = new MutationObserver(schedule)
  changed.observe(box, { childList: true, subtree: true, characterData: true })
  void document.fonts?.ready.then(schedule)
  schedule()
  onCleanup(() => {
    options.group?.forget(box)
    cancelAnimationFrame(frame)
    resized.disconnect()
    changed.disconnect()
  })
}
