/**
 * A result's id: `#`, then its number in the session in lowercase hex, at least `digits` digits.
 * @example formatId(10, 4) // '#000a'
 */
export function formatId(n: number, digits: number): string {
  return '#' + n.toString(16).padStart(digits, '0')
}

/** The number behind an id given by the model; the `#` is optional. */
export function parseId(text: string): number | undefined {
  const match = /^#?([0-9a-f]+)$/i.exec(text.trim())
  if (!match?.[1]) return undefined
  const n = Number.parseInt(match[1], 16)
  return Number.isSafeInteger(n) && n > 0 ? n : undefined
}
