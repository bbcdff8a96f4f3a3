import type { Context } from 'hono'
import { LembasError } from '../../errors.js'
import { AUTH_HEADER } from '../../http/auth.js'
import { requestHeadersForUpstream, responseHeadersForClient } from '../../http/headers.js'
import { readBody, sseStream, upstreamResponse } from '../../http/io.js'
import type { PipelineDeps } from '../../pipeline/handle.js'
import { findSession, rebuildHistory, type SessionRef } from '../../pipeline/history.js'
import { answerRecalls } from '../../pipeline/recall.js'
import { sumUsage } from '../../pipeline/usage.js'
import { summaryIndices } from '../../session/compaction.js'
import { identify, shortHash } from '../../session/identity.js'
import type { Store } from '../../store/store.js'
import type { UpstreamResponse } from '../../upstream/index.js'
import { isRecord } from '../../wire/chat.js'
import { decodeSse, SSE_DONE } from '../../wire/sse.js'
import { chatTools, itemKey, responsesTool, toChat, type Item } from './items.js'

export interface ResponsesDeps extends PipelineDeps {
  readonly options: { readonly maxBodyBytes: number }
}

/** `POST /v1/responses`: the same shaping as chat completions, in the Responses format. */
export function responsesHandler(deps: ResponsesDeps): (c: Context) => Promise<Response> {
  return async (c) => {
    const rawBody = await readBody(c, deps.options.maxBodyBytes)
    const headers = requestHeadersForUpstream(c.req.raw.headers, { drop: [AUTH_HEADER] })
    const turn = await prepare(rawBody, c.req.raw.headers, headers, c.req.raw.signal, deps)
    if (!turn) {
      const response = await deps.upstream.send({
        method: 'POST',
        path: '/responses',
        headers: { ...headers, 'content-type': 'application/json' },
        body: rawBody,
        signal: c.req.raw.signal,
      })
      return upstreamResponse(response)
    }
    const first = await send(turn, [])
    if (first.status !== 200) return upstreamResponse(first)
    if (turn.fields.stream === true) {
      return new Response(sseStream(streamResponses(turn, first)), {
        status: 200,
        headers: {
          ...responseHeadersForClient(first.headers, { passthroughEncoding: false }),
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          'x-accel-buffering': 'no',
        },
      })
    }
    const body = await completeResponses(turn, first)
    return new Response(body, {
      status: 200,
      headers: {
        ...responseHeadersForClient(first.headers, { passthroughEncoding: false }),
        'content-type': 'application/json',
      },
    })
  }
}

/** One Responses request's upstream exchange. */
interface Turn {
  readonly fields: Record<string, unknown> & { input: Item[] }
  readonly headers: Record<string, string>
  readonly signal: AbortSignal
  readonly session: SessionRef
  /** Undefined when the client has its own `recall`: nothing is intercepted then. */
  readonly recallName: string | undefined
  readonly deps: ResponsesDeps
}

/** Rebuilds the request; undefined when it has no tools or no item list (forwarded as it came). */
async function prepare(
  rawBody: Buffer,
  clientHeaders: Headers,
  headers: Record<string, string>,
  signal: AbortSignal,
  deps: ResponsesDeps,
): Promise<Turn | undefined> {
  let body: unknown
  try {
    body = JSON.parse(rawBody.toString('utf8'))
  } catch {
    throw new LembasError('invalid_request', 'the body is not valid JSON')
  }
  if (!isRecord(body)) throw new LembasError('invalid_request', 'the body must be a JSON object')
  const tools = body.tools === undefined ? [] : body.tools
  if (!Array.isArray(tools)) throw new LembasError('invalid_request', "'tools' must be an array")
  if (typeof body.input === 'string' || tools.length === 0) return undefined
  if (!Array.isArray(body.input) || !body.input.every(isRecord))
    throw new LembasError('invalid_request', "'input' must be a string or an array of items")
  const input = body.input as Item[]
  const instructions = typeof body.instructions === 'string' ? body.instructions : ''

  const view = toChat(instructions, input)
  const identity = identify(clientHeaders, body, deps.sessionSources)
  const continuity = {
    summaries: summaryIndices(view.messages, deps.profile.compaction),
    systemKey: shortHash(instructions),
    withinMs: deps.continueWithinMs,
    now: (deps.now ?? Date.now)(),
  }
  const session = await findSession(view.messages, identity, deps.store, continuity)
  const definitions = chatTools(tools)
  const rebuilt = await rebuildHistory(view.messages, definitions, session, deps, continuity)

  // The rebuilt tool messages, in order, go back into the items they came from.
  const outputs = new Map<number, string>()
  const pending = view.messages.flatMap((message, i) =>
    message.role === 'tool' ? [{ id: message.tool_call_id, origin: view.origins[i]! }] : [],
  )
  let next = 0
  for (const message of rebuilt.messages) {
    const want = pending[next]
    if (message.role !== 'tool' || !want || message.tool_call_id !== want.id) continue
    if (typeof message.content !== 'string')
      throw new Error('a Responses tool output was rendered as parts')
    outputs.set(want.origin, message.content)
    next++
  }
  if (next !== pending.length)
    throw new Error('a Responses tool output was left without a rendering')
  const system = rebuilt.messages[0]
  if (system?.role !== 'system' || typeof system.content !== 'string')
    throw new Error('the rebuild did not keep the instructions first')

  // A summary (Codex's compaction) gets the table of files read before it, as in chat.
  const tables = new Map<number, string>()
  if (rebuilt.messages.length === view.messages.length) {
    for (const index of continuity.summaries) {
      const before = view.messages[index]?.content
      const after = rebuilt.messages[index]?.content
      const origin = view.origins[index]
      if (typeof before !== 'string' || typeof after !== 'string' || origin === undefined) continue
      if (after.length > before.length + 2 && after.startsWith(before + '\n\n')) {
        tables.set(origin, after.slice(before.length + 2))
      }
    }
  }
  const shaped = input.map((item, i) => {
    const output = outputs.get(i)
    const table = tables.get(i)
    if (table !== undefined) return withTableItem(item, table)
    return output === undefined ? item : { ...item, output }
  })
  const restored = await restoreHidden(shaped, session.scope, deps.store)
  const recallName = deps.recall.name
  const clientHasRecall = tools.some((tool) => isRecord(tool) && tool.name === recallName)
  if (clientHasRecall)
    deps.log.warn('recall-left-to-client', {
      reason: `the client defines a tool named ${recallName}`,
    })
  const fields = {
    ...body,
    instructions: system.content,
    input: restored,
    tools: clientHasRecall ? tools : [...tools, responsesTool(deps.recall.tool)],
  }
  deps.recorder?.record({
    session: session.scope,
    received: rawBody.toString('utf8'),
    sent: JSON.stringify(fields),
  })
  deps.log.debug('rebuilt', { session: session.scope, format: 'responses', ...rebuilt.stats })
  return {
    fields,
    headers,
    signal,
    session,
    recallName: clientHasRecall ? undefined : recallName,
    deps,
  }
}

function send(turn: Turn, extra: readonly Item[]): Promise<UpstreamResponse> {
  const body = { ...turn.fields, input: [...turn.fields.input, ...extra] }
  return turn.deps.upstream.send({
    method: 'POST',
    path: '/responses',
    headers: { ...turn.headers, 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify(body)),
    signal: turn.signal,
  })
}

function isRecallItem(turn: Turn, item: unknown): item is Item {
  return (
    turn.recallName !== undefined &&
    isRecord(item) &&
    item.type === 'function_call' &&
    item.name === turn.recallName
  )
}

function isClientCall(item: Item): boolean {
  return item.type === 'function_call' || item.type === 'custom_tool_call'
}

/** The answers to a round's recall calls, as function_call_output items. */
async function answer(turn: Turn, recalls: readonly Item[], round: number): Promise<Item[]> {
  const calls = recalls.map((item) => ({
    id: String(item.call_id),
    type: 'function',
    function: {
      name: String(item.name),
      arguments: typeof item.arguments === 'string' ? item.arguments : '',
    },
  }))
  const { store, rules, log } = turn.deps
  const answers = await answerRecalls(calls, turn.session.ensure(), store, rules)
  log.info('recall-answered', { calls: recalls.length, round: round + 1, format: 'responses' })
  return answers.map((message) => ({
    type: 'function_call_output',
    call_id: message.tool_call_id,
    output: message.content,
  }))
}

function lastRound(turn: Turn, round: number): boolean {
  return round + 1 >= turn.deps.recall.maxRounds
}

/** A non-streaming response: recall calls answered here, the rest returned to the client. */
async function completeResponses(turn: Turn, first: UpstreamResponse): Promise<string> {
  let response = first
  let extra: Item[] = []
  const visible: Item[] = []
  const upstreamItems: Item[] = []
  let usage: unknown
  for (let round = 0; ; round++) {
    const raw = await response.body.text()
    if (response.status !== 200)
      throw new LembasError(
        'upstream_bad_response',
        `upstream answered ${response.status} after a recall: ${raw.slice(0, 500)}`,
      )
    const json = parseJson(raw)
    if (!isRecord(json) || !Array.isArray(json.output)) {
      if (round === 0) return raw
      throw new LembasError('upstream_bad_response', 'upstream sent a response without output')
    }
    const output = json.output.filter(isRecord)
    const recalls = output.filter((item) => isRecallItem(turn, item))
    if (round === 0 && recalls.length === 0) return raw // the common case: untouched bytes
    usage = sumUsage(usage, json.usage)
    const others = output.filter((item) => !isRecallItem(turn, item))
    visible.push(...others)
    upstreamItems.push(...output)
    if (recalls.length > 0) {
      const answers = await answer(turn, recalls, round)
      upstreamItems.push(...answers)
      if (!others.some(isClientCall) && !lastRound(turn, round)) {
        extra = [...extra, ...output, ...answers]
        response = await send(turn, extra)
        continue
      }
    }
    await recordHidden(visible, upstreamItems, turn.session, turn.deps.store)
    json.output = visible
    if (usage !== undefined) json.usage = usage
    return JSON.stringify(json)
  }
}

const TERMINAL = new Set(['response.completed', 'response.incomplete'])

/**
 * A streaming response in the Responses event grammar. Events flow through as they come but
 * those of a recall call; later items are renumbered; one final `response.completed`.
 */
async function* streamResponses(turn: Turn, first: UpstreamResponse): AsyncGenerator<string> {
  let response = first
  let sequence = 0
  let clientIndex = 0
  let extra: Item[] = []
  const visible: Item[] = []
  const upstreamItems: Item[] = []
  let usage: unknown
  let responseId: unknown
  const emit = (event: Record<string, unknown>): string => {
    if ('sequence_number' in event) event.sequence_number = sequence++
    return `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`
  }
  try {
    for (let round = 0; ; round++) {
      const hiddenIndices = new Set<number>()
      const indices = new Map<number, number>()
      const done = new Map<number, Item>()
      let completed: Record<string, unknown> | undefined
      for await (const sse of decodeSse(response.body)) {
        if (sse.data === SSE_DONE) continue
        const event = parseJson(sse.data)
        if (!isRecord(event))
          throw new LembasError('upstream_bad_response', 'upstream sent an event that is not JSON')
        const type = event.type
        if (type === 'response.created' || type === 'response.in_progress') {
          if (round > 0) continue
          if (isRecord(event.response)) responseId ??= event.response.id
          yield emit(event)
          continue
        }
        if (typeof type === 'string' && TERMINAL.has(type)) {
          completed = event
          continue
        }
        if (type === 'response.failed' || type === 'error') {
          yield emit(event)
          return
        }
        if (typeof event.output_index === 'number') {
          const at = event.output_index
          if (type === 'response.output_item.added' && isRecallItem(turn, event.item))
            hiddenIndices.add(at)
          if (type === 'response.output_item.done' && isRecord(event.item)) done.set(at, event.item)
          if (hiddenIndices.has(at)) continue
          if (!indices.has(at)) indices.set(at, clientIndex++)
          event.output_index = indices.get(at)
        }
        yield emit(event)
      }
      const final = isRecord(completed?.response) ? completed.response : undefined
      const output =
        done.size > 0
          ? [...done.entries()].sort(([a], [b]) => a - b).map(([, item]) => item)
          : Array.isArray(final?.output)
            ? final.output.filter(isRecord)
            : []
      usage = sumUsage(usage, final?.usage)
      const recalls = output.filter((item) => isRecallItem(turn, item))
      if (round === 0 && recalls.length === 0) {
        if (completed) yield emit(completed)
        return
      }
      const others = output.filter((item) => !isRecallItem(turn, item))
      visible.push(...others)
      upstreamItems.push(...output)
      if (recalls.length > 0) {
        const answers = await answer(turn, recalls, round)
        upstreamItems.push(...answers)
        if (!others.some(isClientCall) && !lastRound(turn, round)) {
          extra = [...extra, ...output, ...answers]
          response = await send(turn, extra)
          if (response.status !== 200) {
            const detail = (await response.body.text()).slice(0, 500)
            throw new LembasError(
              'upstream_bad_response',
              `upstream answered ${response.status} after a recall: ${detail}`,
            )
          }
          continue
        }
      }
      await recordHidden(visible, upstreamItems, turn.session, turn.deps.store)
      const end: Record<string, unknown> = completed ?? {
        type: 'response.completed',
        sequence_number: 0,
      }
      end.response = {
        ...(final ?? {}),
        ...(responseId === undefined ? {} : { id: responseId }),
        output: visible,
        ...(usage === undefined ? {} : { usage }),
      }
      yield emit(end)
      return
    }
  } catch (error) {
    if (turn.signal.aborted) return
    const mapped =
      error instanceof LembasError ? error : turn.deps.upstream.mapError(error, turn.signal)
    const kind = mapped instanceof LembasError ? mapped.kind : 'upstream_bad_response'
    const message = mapped instanceof Error ? mapped.message : 'the upstream stream failed'
    turn.deps.log.warn('stream-failed', { kind, message, format: 'responses' })
    yield emit({
      type: 'response.failed',
      sequence_number: 0,
      response: { id: responseId, status: 'failed', error: { code: kind, message } },
    })
  }
}

/** Where a hidden exchange is kept: under the first item the client got. */
const hiddenKey = (item: Item) => 'h:r' + itemKey(item)

interface HiddenItems {
  /** The keys of the items the client got, in order. */
  readonly visible: readonly string[]
  /** What the upstream really had in their place. */
  readonly items: readonly Item[]
}

/** Records what the upstream had where the client has `visible`, before the client sees it. */
async function recordHidden(
  visible: readonly Item[],
  upstreamItems: readonly Item[],
  session: SessionRef,
  store: Store,
): Promise<void> {
  const head = visible[0]
  if (!head) return
  const record: HiddenItems = { visible: visible.map(itemKey), items: upstreamItems }
  await store.putIfAbsent(session.ensure(), [[hiddenKey(head), JSON.stringify(record)]])
}

/** Puts each recorded exchange back in place of the items the client got from it. */
async function restoreHidden(
  input: readonly Item[],
  scope: string | undefined,
  store: Store,
): Promise<Item[]> {
  if (scope === undefined) return [...input]
  const candidates = input.flatMap((item, i) =>
    item.type === 'message' && item.role !== 'assistant' ? [] : [i],
  )
  if (candidates.length === 0) return [...input]
  const values = await store.get(
    scope,
    candidates.map((i) => hiddenKey(input[i]!)),
  )
  const records = new Map<number, HiddenItems>()
  candidates.forEach((i, k) => {
    const value = values[k]
    if (value !== undefined) records.set(i, JSON.parse(value) as HiddenItems)
  })
  if (records.size === 0) return [...input]
  const out: Item[] = []
  for (let i = 0; i < input.length; i++) {
    const record = records.get(i)
    const matches =
      record !== undefined &&
      record.visible.every((key, k) => input[i + k] !== undefined && itemKey(input[i + k]!) === key)
    if (!record || !matches) {
      out.push(input[i]!)
      continue
    }
    out.push(...record.items)
    i += record.visible.length - 1
  }
  return out
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** A message item with the table after its text: one more input_text part, or a longer string. */
function withTableItem(item: Item, table: string): Item {
  const content = item.content
  if (typeof content === 'string') return { ...item, content: content + '\n\n' + table }
  if (Array.isArray(content))
    return { ...item, content: [...content, { type: 'input_text', text: table }] }
  return item
}
