import { countChars, fill, sliceChars, splitLines } from './text.js'
import type { ContextRules } from './types.js'

/**
 * Head+tail cap (spec §3). A text over max_lines or max_chars keeps as many whole lines as fit
 * both head budgets, one elided line, and as many whole lines as fit both tail budgets.
 * @example capText(longText, 'ff', rules) // 'line 1\n…\n[1234 lines elided, full output #00ff]\n…'
 */
export function capText(text: string, id: string, rules: ContextRules): string {
  const cap = rules.cap
  // A text within max_chars UTF-16 units is within max_chars code points: skip the count.
  const overChars = text.length > cap.max_chars && countChars(text) > cap.max_chars
  const { lines, trailingNewline } = splitLines(text)
  if (lines.length <= cap.max_lines && !overChars) return text

  const head: string[] = []
  let headChars = 0
  const first = lines[0] ?? ''
  const firstChars = countChars(first)
  if (firstChars > cap.head_chars) {
    head.push(sliceChars(first, cap.head_chars) + rules.texts.cut)
  } else {
    for (const line of lines) {
      const cost = countChars(line) + (head.length > 0 ? 1 : 0)
      if (head.length >= cap.head_lines || headChars + cost > cap.head_chars) break
      head.push(line)
      headChars += cost
    }
  }

  const tail: string[] = []
  let tailChars = 0
  for (let i = lines.length - 1; i >= head.length; i--) {
    const line = lines[i] ?? ''
    const cost = countChars(line) + (tail.length > 0 ? 1 : 0)
    if (tail.length >= cap.tail_lines || tailChars + cost > cap.tail_chars) break
    tail.unshift(line)
    tailChars += cost
  }

  const elided = fill(rules.texts.elided, { count: lines.length - head.length - tail.length, id })
  return [...head, elided, ...tail].join('\n') + (trailingNewline && tail.length > 0 ? '\n' : '')
}
