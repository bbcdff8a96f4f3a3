import { z } from 'zod'
import { TEXT_NAMES } from '../context/index.js'

const count = z.int().positive()

/**
 * A text whose placeholders are among `names`: `fill` throws on one it has no value for, which
 * would fail a turn; a typo in loop.json fails at start-up instead.
 */
const template = (...names: string[]) =>
  z
    .string()
    .min(1)
    .refine(
      (text) => [...text.matchAll(/\{(\w+)\}/g)].every((m) => names.includes(m[1]!)),
      `placeholders: ${names.map((name) => `{${name}}`).join(', ')}`,
    )

const CapSchema = z.strictObject({
  max_lines: count,
  max_chars: count,
  head_lines: count,
  head_chars: count,
  tail_lines: count,
  tail_chars: count,
})

const TextsSchema = z.strictObject(
  Object.fromEntries(TEXT_NAMES.map((name) => [name, z.string().min(1)])) as Record<
    (typeof TEXT_NAMES)[number],
    z.ZodString
  >,
)

export const ContextSchema = z.strictObject({
  spec: z.string(),
  ids: z.strictObject({ digits: count }),
  sha_digits: z.int().min(1).max(64),
  cap: CapSchema,
  window: z.strictObject({ lines: count }),
  dedupe: z.strictObject({ by_result: z.array(z.enum(['list', 'glob', 'grep', 'search'])) }),
  compaction: z.strictObject({ rows: count }),
  texts: TextsSchema,
})

export const ProxySchema = z.strictObject({
  sessions: z.strictObject({
    /** After a compaction without a session id, only a session active this recently continues. */
    continue_within_ms: z.int().positive(),
    /**
     * Headers a subagent's requests carry with the session that started it (opencode's and
     * Kilo's `x-parent-session-id`), tried first: a session and its subagents are one session
     * (one numbering of ids, recall across them), as Claude Code's are.
     */
    parent_headers: z.array(z.string().regex(/^[a-z0-9_-]+$/)),
    /** Request headers that carry an agent's session id, tried after --session-header. */
    headers: z.array(z.string().regex(/^[a-z0-9_-]+$/)),
    /**
     * Headers that name a session the body names too (Codex's `session-id`, Claude Code's
     * `x-claude-code-session-id`): not its identity, which the body gives as ever, but where the
     * fast path remembers it, so that many sessions of one key do not share one place.
     */
    affinity_headers: z.array(z.string().regex(/^[a-z0-9_-]+$/)),
    /** Body fields (dotted paths) that carry one. */
    body: z.array(z.string().min(1)),
    /** A session id inside the `user` field (routers fill it for Claude Code). */
    user_pattern: z.string().refine((source) => {
      try {
        return new RegExp(source).source.includes('(')
      } catch {
        return false
      }
    }, 'a regular expression with a capturing group'),
  }),
  /**
   * `--elide` (beyond spec 3.0.0): the stand-in of an elided result; {bracket} (which starts
   * with the id) is required, {id} optional.
   */
  elide: z.strictObject({
    stand_in: z.string().refine((text) => text.includes('{bracket}'), 'needs {bracket}'),
    /**
     * `--elide-inputs`: what replaces each long string (input_min_chars or more) of an elided
     * result's call; {id} (the result's id) is required. `recalled_input` opens a recall of
     * that id with the call's input as the model wrote it ({input}).
     */
    input_stand_in: z.string().refine((text) => text.includes('{id}'), 'needs {id}'),
    input_min_chars: count,
    recalled_input: z.string().refine((text) => text.includes('{input}'), 'needs {input}'),
  }),
  recall: z.strictObject({
    tool_name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
    max_rounds: count,
    /** Follows the answers of round max_rounds, after which the model is asked once more. */
    last_round_note: z.string().min(1),
    /** The answer's text when the model still called only recall after that last round. */
    limit_answer: z.string().min(1),
    /**
     * A recall round's request is the proxy's own: an answer with one of these statuses (a rate
     * limit, an overload: nothing generated) is asked again, after its Retry-After or a wait
     * that doubles from first_wait_ms, up to `attempts` more times; a wait longer than
     * max_wait_ms is not waited for (the error goes to the client).
     */
    round_retry: z.strictObject({
      statuses: z.array(z.int().min(100).max(599)),
      attempts: z.int().min(0),
      first_wait_ms: z.int().min(0),
      max_wait_ms: z.int().min(0),
    }),
    /**
     * What one round answers at most: the window bounds an answer in lines only, and a model
     * that recalled a 4 MB one-line result 100 times in a round made a 419 MB request. The
     * calls past max_calls get too_many_answer each ({max}, {target}; no id, nothing stored);
     * the answers share round_chars characters, in call order: one past what is left shows
     * the whole lines that fit and cut_note ({next}, {max}), a line longer than a round shows
     * its start and line_cut_note ({line}, {shown}, {length}, {next}).
     */
    max_calls: count,
    too_many_answer: template('max', 'target'),
    round_chars: count,
    cut_note: template('next', 'max'),
    line_cut_note: template('line', 'shown', 'length', 'next'),
    description: z.string().min(1),
    /** Each parameter's description; one left out is sent without (every token counts). */
    parameters: z.strictObject({
      id: z.string().min(1).optional(),
      offset: z.string().min(1).optional(),
      limit: z.string().min(1).optional(),
    }),
  }),
})

export const LoopSchema = z.strictObject({ context: ContextSchema, proxy: ProxySchema })

export type Loop = z.infer<typeof LoopSchema>
