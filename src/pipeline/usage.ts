import { isRecord } from '../wire/chat.js'

/** Adds two usage objects field by field (nested counts too, e.g. prompt_tokens_details). */
export function sumUsage(a: unknown, b: unknown): unknown {
  if (a === undefined || a === null) return b
  if (b === undefined || b === null) return a
  if (typeof a === 'number' && typeof b === 'number') return a + b
  if (typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const out: Record<string, unknown> = { ...(a as Record<string, unknown>) }
    for (const [key, value] of Object.entries(b as Record<string, unknown>))
      out[key] = sumUsage(out[key], value)
    return out
  }
  return b // not a count (a model name, a flag): the latest wins
}

/** Output counts: what the model wrote, over every round (its hidden rounds' calls too). */
const OUTPUT = /^(completion|output)_tokens(_details)?$/

/**
 * The usage the client is told after recall rounds: the input as the last round had it (the
 * context as it is now: Codex and Claude Code compact by it, and a sum over rounds that each
 * send the whole history again told them it was two to five times larger), the output summed
 * over the rounds, the total the two. `/stats` counts every round's input (sumUsage).
 */
export function roundsUsage(before: unknown, latest: unknown): unknown {
  if (!isRecord(before)) return latest
  if (!isRecord(latest)) return before
  const out: Record<string, unknown> = { ...latest }
  for (const [key, value] of Object.entries(before))
    if (OUTPUT.test(key)) out[key] = sumUsage(value, latest[key])
  const input = out.prompt_tokens ?? out.input_tokens
  const output = out.completion_tokens ?? out.output_tokens
  if (
    typeof out.total_tokens === 'number' &&
    typeof input === 'number' &&
    typeof output === 'number'
  )
    out.total_tokens = input + output
  return out
}
