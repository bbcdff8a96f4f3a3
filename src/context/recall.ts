import { fill, splitLines } from './text.js'
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
}

/**
 * A recall's answer (spec §4): the stored result, in full, up to the window's lines from offset.
 * Not capped, not deduplicated.
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
  const bracket = fill(t.recall_bracket, { id, target, start: offset, end, total })
  return bracket + before + '\n' + lines.slice(offset - 1, end).join('\n')
}

/** Model-given numbers: non-numbers take the default, the rest is clamped into range. */
function clampInt(value: number | undefined, min: number, max: number, fallback: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback
  return Math.min(max, Math.max(min, Math.trunc(value)))
}
