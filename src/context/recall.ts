import { countChars, fill, sliceChars, splitLines } from './text.js'
import type { ContextRules } from './types.js'

export interface RecallRequest {
  /** The recall's own id. */
  readonly id: string
  /** The id asked for, formatted (or as given, when it is not an id). */
  readonly target: string
  /** The stored full text of the target; undefined when the session never gave that id. */
  readonly stored: string | undefined
  /** 1-based first line; default 1. */
  readonly offset?: number | undefined
  /** Lines to show; default and maximum: the window. */
  readonly limit?: number | undefined
  /**
   * Beyond the spec (`--elide-inputs`): the elided call, shown after the bracket and a blank
   * line before the lines. Not one of the result's lines: offsets and totals are the result's.
   */
  readonly preamble?: string | undefined
  /** Beyond the spec: the characters this answer may take (see RecallBudget). */
  readonly budget?: RecallBudget | undefined
}

/**
 * Beyond the spec (loop.json `proxy.recall.round_chars`): the window bounds an answer in lines,
 * not characters, so a result of long lines (a 4 MB minified line) recalled again and again made
 * one request of hundreds of MB. An answer longer than `chars` shows the whole lines that fit
 * and `cut_note` (which offset shows the rest); a line that no round could show whole shows its
 * start and `line_cut_note`. The bracket counts the lines shown, so it stays the spec's.
 */
export interface RecallBudget {
  /** Characters (code points) left for this answer: bracket, preamble and lines. */
  readonly chars: number
  /** The round's whole budget, named in the notice ({max}). */
  readonly max: number
  /** Follows whole lines cut short: {next}, {max}. */
  readonly cutNote: string
  /** Follows the start of a line longer than a round shows: {line}, {shown}, {length}, {next}. */
  readonly lineCutNote: string
}

/**
 * A recall's answer (spec §4): the stored result, in full, up to the window's lines from offset.
 * Not capped, not deduplicated. With a budget, no longer than it (the notices aside).
 * @example renderRecall({ id: '#0021', target: '#0020', stored }, rules) // '[#0021 recall #0020 lines 1-2000 of 3400]\n…'
 */
export function renderRecall(request: RecallRequest, rules: ContextRules): string {
  const t = rules.texts
  const { id, target } = request
  if (request.stored === undefined) {
    return fill(t.id_bracket, { id }) + ' ' + fill(t.recall_unknown, { target })
  }
  const { lines } = splitLines(request.stored)
  const total = lines.length
  const before = request.preamble === undefined ? '' : '\n' + request.preamble + '\n'
  if (total === 0) return fill(t.recall_bracket_empty, { id, target }) + before
  const window = rules.window.lines
  const offset = clampInt(request.offset, 1, Number.MAX_SAFE_INTEGER, 1)
  const limit = clampInt(request.limit, 1, window, window)
  if (offset > total) {
    return fill(t.id_bracket, { id }) + ' ' + fill(t.recall_past_end, { target, total, offset })
  }
  const end = Math.min(total, offset + limit - 1)
  const bracket = (last: number) =>
    fill(t.recall_bracket, { id, target, start: offset, end: last, total })
  const whole = bracket(end) + before + '\n' + lines.slice(offset - 1, end).join('\n')
  const budget = request.budget
  if (budget === undefined || whole.length <= budget.chars || countChars(whole) <= budget.chars)
    return whole
  return cutToBudget(lines, offset, end, bracket, before, budget, fill(t.id_bracket, { id }))
}

/** An answer past its budget (see RecallBudget): the whole lines that fit, else a line's start. */
function cutToBudget(
  lines: readonly string[],
  offset: number,
  end: number,
  bracket: (last: number) => string,
  before: string,
  budget: RecallBudget,
  idBracket: string,
): string {
  // The bracket of `end` is the longest any cut shows (fewer lines, no more digits).
  const fixed = countChars(bracket(end)) + countChars(before) + 1
  const room = budget.chars - fixed
  let last = offset - 1
  for (let used = 0; last < end; last++) {
    used += countChars(lines[last]!) + (last >= offset ? 1 : 0)
    if (used > room) break
  }
  if (last >= offset) {
    const shown = lines.slice(offset - 1, last).join('\n')
    const note = fill(budget.cutNote, { next: last + 1, max: budget.max })
    return bracket(last) + before + '\n' + shown + '\n' + note
  }
  const first = lines[offset - 1]!
  const length = countChars(first)
  // A line longer than a whole round shows its start; one a later round shows whole waits.
  if (room > 0 && length > budget.max - fixed) {
    const note = fill(budget.lineCutNote, { line: offset, shown: room, length, next: offset + 1 })
    return bracket(offset) + before + '\n' + sliceChars(first, room) + '\n' + note
  }
  return idBracket + ' ' + fill(budget.cutNote, { next: offset, max: budget.max })
}

/** Model-given numbers: non-numbers take the default, the rest is clamped into range. */
function clampInt(value: number | undefined, min: number, max: number, fallback: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback
  return Math.min(max, Math.max(min, Math.trunc(value)))
}
