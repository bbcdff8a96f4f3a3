import {
  countChars,
  fill,
  formatId,
  parseId,
  renderRecall,
  type ContextRules,
} from '../context/index.js'
import type { Memo } from '../memo.js'
import { claimAndWrite } from './next-ids.js'
import type { Loop } from '../config/loop-schema.js'
import type { Store } from '../store/store.js'
import { isRecord, type ToolCall, type ToolDefinition } from '../wire/chat.js'
import type { RecallReply } from './door.js'
import { keys } from '../session/records.js'

export interface RecallSetup {
  readonly name: string
  readonly maxRounds: number
  readonly lastRoundNote: string
  /** The answer's text when the model called only recall after that note too. */
  readonly limitAnswer: string
  /** When a recall round's request is asked again (loop.json `proxy.recall.round_retry`). */
  readonly retry: RoundRetry
  /** What one round answers at most (loop.json `max_calls`, `round_chars` and their texts). */
  readonly limits: RecallLimits
  readonly tool: ToolDefinition
}

/**
 * A round's bounds. The window bounds an answer in lines only, and nothing bounded the calls:
 * a model (a prompt injection) that recalled a 4 MB one-line result 100 times in one round made
 * a 419 MB upstream request (at 150 the proxy failed with a 500), stalled the process for
 * seconds and stored as much again.
 */
export interface RecallLimits {
  /** Calls answered in a round; each one after gets `tooMany` ({max}, {target}), no id. */
  readonly maxCalls: number
  readonly tooMany: string
  /** Characters the round's answers show together (see RecallBudget). */
  readonly roundChars: number
  readonly cutNote: string
  readonly lineCutNote: string
}

export interface RoundRetry {
  readonly statuses: readonly number[]
  readonly attempts: number
  readonly firstWaitMs: number
  readonly maxWaitMs: number
}

export function recallSetup(recall: Loop['proxy']['recall']): RecallSetup {
  return {
    name: recall.tool_name,
    maxRounds: recall.max_rounds,
    lastRoundNote: recall.last_round_note,
    limitAnswer: recall.limit_answer,
    retry: {
      statuses: recall.round_retry.statuses,
      attempts: recall.round_retry.attempts,
      firstWaitMs: recall.round_retry.first_wait_ms,
      maxWaitMs: recall.round_retry.max_wait_ms,
    },
    limits: {
      maxCalls: recall.max_calls,
      tooMany: recall.too_many_answer,
      roundChars: recall.round_chars,
      cutNote: recall.cut_note,
      lineCutNote: recall.line_cut_note,
    },
    tool: {
      type: 'function',
      function: {
        name: recall.tool_name,
        description: recall.description,
        parameters: {
          type: 'object',
          properties: {
            id: parameter('string', recall.parameters.id),
            offset: parameter('integer', recall.parameters.offset),
            limit: parameter('integer', recall.parameters.limit),
          },
          required: ['id'],
        },
      },
    },
  }
}

/** A parameter's schema: its description only when loop.json gives one. */
function parameter(type: string, description: string | undefined): Record<string, string> {
  return description === undefined ? { type } : { type, description }
}

/**
 * Answers the model's recall calls from the session's own store: each answer gets the next id
 * (claimed under `claims`, one per call: a retried request gets the same ids) and is stored like
 * any result. An id of another session is simply not there. A `note` follows each answer (not
 * stored with it: a recall of the answer's id shows the answer alone). Within `limits`: the
 * calls past `maxCalls` get a short refusal each (every call needs its result, as the APIs
 * require), claim no id and store nothing; the answers share `roundChars`, in call order.
 */
export async function answerRecalls(
  calls: readonly ToolCall[],
  claims: readonly string[],
  scope: string,
  store: Store,
  rules: ContextRules,
  nextIds: Memo<number>,
  limits: RecallLimits,
  note?: string,
): Promise<RecallReply[]> {
  const asked = calls.map((call) => recallArguments(call.function.arguments))
  const targets = asked.map((args) => (args.id === undefined ? undefined : parseId(args.id)))
  const answered = Math.min(calls.length, limits.maxCalls)
  // Only the answered calls' results are read, each once (a flood names one id many times).
  const wanted = [...new Set(targets.slice(0, answered))].filter(
    (n): n is number => n !== undefined,
  )
  // An id whose call `--elide-inputs` elided shows that call first, then the result.
  const found = await store.get(scope, [...wanted.map(keys.result), ...wanted.map(keys.input)])
  const storedByNumber = new Map(
    wanted.map((n, i) => {
      const [result, input] = [found[i], found[wanted.length + i]]
      return [n, { result, input: result === undefined ? undefined : input }]
    }),
  )
  // Each answer is stored under its own id: claimed with the write where the next id is known.
  const { winners } = await claimAndWrite(
    store,
    nextIds,
    scope,
    claims.slice(0, answered).map(keys.recallClaim),
    async (numbers) => {
      let left = limits.roundChars
      const entries = numbers.map((number, i) => {
        const stored = targets[i] === undefined ? undefined : storedByNumber.get(targets[i]!)
        const text = renderRecall(
          {
            id: formatId(number, rules.ids.digits),
            target: targetLabel(asked[i]!.id, targets[i], rules),
            stored: stored?.result,
            preamble: stored?.input,
            offset: asked[i]!.offset,
            limit: asked[i]!.limit,
            budget: {
              chars: left,
              max: limits.roundChars,
              cutNote: limits.cutNote,
              lineCutNote: limits.lineCutNote,
            },
          },
          rules,
        )
        left = Math.max(0, left - countChars(text))
        return [keys.result(number), text] as const
      })
      return { entries }
    },
  )
  const after = note === undefined ? '' : '\n\n' + note
  return calls.map((call, i) => {
    const target = targetLabel(asked[i]!.id, targets[i], rules)
    const text = i < answered ? winners[i]! : fill(limits.tooMany, { max: limits.maxCalls, target })
    return { callId: call.id, content: text + after }
  })
}

interface RecallArguments {
  id?: string | undefined
  offset?: number | undefined
  limit?: number | undefined
}

/** The model's arguments, forgiving: numbers as strings, a bare id; anything else is absent. */
function recallArguments(json: string): RecallArguments {
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return {}
  }
  if (!isRecord(value)) return {}
  const id =
    typeof value.id === 'string' || typeof value.id === 'number' ? String(value.id) : undefined
  return { id, offset: numberOf(value.offset), limit: numberOf(value.limit) }
}

function numberOf(value: unknown): number | undefined {
  const n = typeof value === 'string' ? Number(value) : value
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined
}

/**
 * The id asked for as the answer names it: an id, else the model's text (40 units of it). A lone
 * surrogate there (`{"id":"\ud800"}`, or a pair cut at the 40th unit) becomes U+FFFD: the store
 * refuses text it cannot keep exactly, and that refusal failed the whole turn with a 400.
 */
function targetLabel(
  given: string | undefined,
  n: number | undefined,
  rules: ContextRules,
): string {
  if (n !== undefined) return formatId(n, rules.ids.digits)
  return wellFormed('#' + (given ?? '').replace(/^#/, '').slice(0, 40))
}

// ES2024 `String.prototype.toWellFormed`: present in Node 20, missing from the ES2023 lib types.
const wellFormed = (text: string): string =>
  (text as unknown as { toWellFormed(): string }).toWellFormed()
