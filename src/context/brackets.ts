import { fill } from './text.js'
import type { ContextRules, ReadCall } from './types.js'

/** The short hash shown in brackets: the first sha_digits hex digits. */
export function shortSha(sha256: string, rules: ContextRules): string {
  return sha256.slice(0, rules.sha_digits)
}

/**
 * A read's bracket (spec §1): path as the call gave it, lines shown, length and short hash. In
 * blind mode it leaves out what the proxy cannot know rather than inventing it.
 * @example readBracket(read, '#0012', rules) // '[#0012 src/app.ts lines 1-200 of 340 sha 1c9e04ab]'
 */
export function readBracket(read: ReadCall, id: string, rules: ContextRules): string {
  const t = rules.texts
  const base = { id, path: read.path, start: read.start, end: read.end }
  if (read.file) {
    const sha = shortSha(read.file.sha256, rules)
    if (read.file.lines === 0) return fill(t.read_bracket_empty, { id, path: read.path, sha })
    return fill(t.read_bracket, { ...base, total: read.file.lines, sha })
  }
  if (read.total !== undefined)
    return fill(t.read_bracket_blind_total, { ...base, total: read.total })
  return fill(t.read_bracket_blind, base)
}
