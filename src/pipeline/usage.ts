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
