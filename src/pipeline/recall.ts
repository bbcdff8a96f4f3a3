import { formatId, parseId, renderRecall, type ContextRules } from '../context/index.js'
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
  readonly tool: ToolDefinition
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
 * stored with it: a recall of the answer's id shows the answer alone).
 */
export async function answerRecalls(
  calls: readonly ToolCall[],
  claims: readonly string[],
  scope: string,
  store: Store,
  rules: ContextRules,
  nextIds: Memo<number>,
  note?: string,
): Promise<RecallReply[]> {
  const asked = calls.map((call) => recallArguments(call.function.arguments))
  const targets = asked.map((args) => (args.id === undefined ? undefined : parseId(args.id)))
  const wanted = targets.filter((n): n is number => n !== undefined)
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
    claims.map(keys.recallClaim),
    async (numbers) => ({
      entries: calls.map((_, i) => {
        const stored = targets[i] === undefined ? undefined : storedByNumber.get(targets[i]!)
        const text = renderRecall(
          {
            id: formatId(numbers[i]!, rules.ids.digits),
            target: targetLabel(asked[i]!.id, targets[i], rules),
            stored: stored?.result,
            preamble: stored?.input,
            offset: asked[i]!.offset,
            limit: asked[i]!.limit,
          },
          rules,
        )
        return [keys.result(numbers[i]!), text] as const
      }),
    }),
  )
  const after = note === undefined ? '' : '\n\n' + note
  return calls.map((call, i) => ({ callId: call.id, content: winners[i]! + after }))
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

function targetLabel(
  given: string | undefined,
  n: number | undefined,
  rules: ContextRules,
): string {
  if (n !== undefined) return formatId(n, rules.ids.digits)
  return '#' + (given ?? '').replace(/^#/, '').slice(0, 40)
}
