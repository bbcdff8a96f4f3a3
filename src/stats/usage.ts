/** The token counts of one answer, from whichever fields the upstream sent. */
export interface UpstreamUsage {
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
}

/**
 * Reads OpenAI-style `usage` (`prompt_tokens`, `completion_tokens`,
 * `prompt_tokens_details.cached_tokens`; vLLM sends the same fields, DeepSeek
 * `prompt_cache_hit_tokens`), the Responses API's (`input_tokens`, `output_tokens`,
 * `input_tokens_details.cached_tokens`), Anthropic's (`input_tokens` not read from the cache,
 * `cache_read_input_tokens`, `cache_creation_input_tokens`) and llama.cpp's `timings`
 * (`cache_n` tokens taken from the cache, `prompt_n` tokens evaluated, `predicted_n`
 * generated). Usage wins where both say something.
 */
export function upstreamUsage(usage: unknown, timings: unknown): UpstreamUsage {
  const u = record(usage)
  const t = record(timings)
  const details = record(u.prompt_tokens_details ?? u.input_tokens_details)
  const cacheN = count(t.cache_n)
  const promptN = count(t.prompt_n)
  const cacheRead = count(u.cache_read_input_tokens)
  // Anthropic counts cache reads and writes apart from input_tokens; OpenAI's include them.
  const anthropic = cacheRead !== undefined || u.cache_creation_input_tokens !== undefined
  const input = count(u.input_tokens)
  const inputTotal =
    input === undefined
      ? undefined
      : anthropic
        ? input + (cacheRead ?? 0) + (count(u.cache_creation_input_tokens) ?? 0)
        : input
  return {
    // llama.cpp's prompt is what it took from the cache and what it evaluated.
    promptTokens: count(u.prompt_tokens) ?? inputTotal ?? (cacheN ?? 0) + (promptN ?? 0),
    completionTokens:
      count(u.completion_tokens) ?? count(u.output_tokens) ?? count(t.predicted_n) ?? 0,
    cachedTokens:
      count(details.cached_tokens) ?? count(u.prompt_cache_hit_tokens) ?? cacheRead ?? cacheN ?? 0,
  }
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {}
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined
}
