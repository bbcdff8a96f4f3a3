/** Fills `{name}` placeholders; a placeholder without a value is a bug, so it throws. */
export function fill(template: string, values: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name]
    if (value === undefined) throw new Error(`template value missing: ${name} in ${template}`)
    return String(value)
  })
}

export interface Lines {
  readonly lines: readonly string[]
  /** The text ended with "\n"; joining the lines back adds it again. */
  readonly trailingNewline: boolean
}

/**
 * Splits on "\n" only, so "\r" stays on its line and CRLF text comes back byte for byte.
 * A final "\n" ends the last line rather than starting an empty one.
 */
export function splitLines(text: string): Lines {
  if (text === '') return { lines: [], trailingNewline: false }
  const trailingNewline = text.endsWith('\n')
  const body = trailingNewline ? text.slice(0, -1) : text
  return { lines: body.split('\n'), trailingNewline }
}

export function countLines(text: string): number {
  return splitLines(text).lines.length
}

/**
 * Characters are Unicode code points: a multi-byte character counts once. The pairs are found
 * by a regular expression, natively (a text without any, most tool output, is not walked in
 * JavaScript unit by unit: a 27 MB output took 0.3 s that way).
 */
export function countChars(text: string): number {
  return text.length - (text.match(SURROGATE_PAIR)?.length ?? 0)
}

const SURROGATE_PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g

/** The first `count` code points of a text. */
export function sliceChars(text: string, count: number): string {
  let units = 0
  for (let taken = 0; taken < count && units < text.length; taken++) {
    const code = text.charCodeAt(units)
    units += code >= 0xd800 && code <= 0xdbff && units + 1 < text.length ? 2 : 1
  }
  return text.slice(0, units)
}
