import {
  upstreamError,
  type Door,
  type Json,
  type Part,
  type RoundEnd,
  type UpstreamError,
} from './door.js'
import type { Memo } from '../memo.js'
import { LembasError, type ErrorKind } from '../errors.js'
import type { Logger } from '../log.js'
import { recordAnswer, type AnswerPlace } from '../session/answers.js'
import type { SessionRef } from '../session/find.js'
import { shortHash } from '../session/identity.js'
import type { Meter } from '../stats/index.js'
import type { Store } from '../store/store.js'
import type { Upstream, UpstreamResponse } from '../upstream/index.js'
import type { ContextRules } from '../context/index.js'
import { decodeSse } from '../wire/sse.js'
import { text } from 'node:stream/consumers'
import { setTimeout } from 'node:timers/promises'
import { bodyBytes, type UpstreamBody } from './body.js'
import { parseAnswer } from './json.js'
import { answerRecalls, type RecallSetup } from './recall.js'
import { roundsUsage, sumUsage } from './usage.js'

/** Everything one request's upstream exchange needs, whatever its door. */
export interface Turn {
  readonly door: Door
  /** The client's request fields (stream options, …). */
  readonly request: Json
  /** What goes upstream; recall rounds append to its items. */
  readonly body: UpstreamBody
  readonly headers: Record<string, string>
  readonly session: SessionRef
  /** Where the answer stands in the client's history: its hidden exchange is kept by it. */
  readonly place: AnswerPlace
  readonly signal: AbortSignal
  /** Null when the client defines its own `recall`: nothing is intercepted. */
  readonly recall: RecallSetup | null
  readonly upstream: Upstream
  /** The upstream path of every round: the door's, with the client's query string. */
  readonly path: string
  readonly store: Store
  /** Each session's next id as this process last claimed it (recall answers claim ids too). */
  readonly nextIds: Memo<number>
  readonly rules: ContextRules
  readonly log: Logger
}

/** Sends the turn's body, with the items of earlier recall rounds appended. */
export function send(turn: Turn, extra: readonly Json[] = []): Promise<UpstreamResponse> {
  return turn.upstream.send({
    method: 'POST',
    path: turn.path,
    headers: { ...turn.headers, 'content-type': 'application/json' },
    body: bodyBytes(turn.body, extra),
    signal: turn.signal,
  })
}

/**
 * Sends a recall round's request, the proxy's own: an answer that says nothing was generated
 * (a rate limit, an overload: loop.json `round_retry`) is asked again after its Retry-After or a
 * doubling wait, as the client would have asked its own request again. The client's 200 has
 * gone already, so without this a rate limit in a hidden round ended its turn with an error
 * (Claude Code and Qwen Code stop there). A failure to connect is not asked again: whether the
 * request reached the upstream cannot be known.
 */
export async function sendRound(turn: Turn, extra: readonly Json[]): Promise<UpstreamResponse> {
  const retry = turn.recall?.retry
  for (let attempt = 0; ; attempt++) {
    const response = await send(turn, extra)
    if (!retry || attempt >= retry.attempts || !retry.statuses.includes(response.status))
      return response
    const waitMs = retryWait(response.headers, retry.firstWaitMs * 2 ** attempt)
    if (waitMs > retry.maxWaitMs) return response
    await readAll(turn, response) // its error body: the connection goes back to the pool
    turn.log.warn('recall-round-retried', {
      status: response.status,
      attempt: attempt + 1,
      waitMs,
      door: turn.door.name,
    })
    await waitOrStop(turn, waitMs)
  }
}

/**
 * Waits `ms` between a round's attempts; a stop whose grace ran out ends the wait with its own
 * error (the client then gets the `stopping` error in its API's shape), a client that left with
 * its abort.
 */
async function waitOrStop(turn: Turn, ms: number): Promise<void> {
  const stopped = turn.upstream.stopped
  try {
    await setTimeout(ms, undefined, { signal: AbortSignal.any([turn.signal, stopped]) })
  } catch (error) {
    if (stopped.aborted && !turn.signal.aborted) throw stopped.reason
    throw error
  }
}

/** How long the upstream asks to be left alone (`retry-after-ms`, `retry-after`), else `fallback`. */
export function retryWait(headers: UpstreamResponse['headers'], fallback: number): number {
  const header = (name: string) => {
    const value = headers[name]
    return Array.isArray(value) ? value[0] : value
  }
  const ms = Number(header('retry-after-ms'))
  if (header('retry-after-ms') !== undefined && Number.isFinite(ms) && ms >= 0) return ms
  const after = header('retry-after')
  if (after === undefined || after.trim() === '') return fallback
  const seconds = Number(after)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const at = Date.parse(after)
  return Number.isNaN(at) ? fallback : Math.max(0, at - Date.now())
}

/**
 * The recall loop, once for every door and for whole and streamed answers alike: each round's
 * recall calls are answered from the store and the upstream is asked again, up to max_rounds
 * (then once more, the answers saying it was the last);
 * the client sees only its own calls, and what the upstream really had is recorded before the
 * client sees the answer.
 */
export class RecallLoop {
  /** Items of the answered rounds, appended to the next upstream request. */
  readonly extra: Json[] = []
  /** The parts the client sees, over every round. */
  readonly visible: Part[] = []
  readonly #hidden: Json[] = []
  usage: unknown
  /** The last round was a recall (the answer ends there). */
  recalled = false
  /** What the proxy says after the answer: the model still called only `recall` at the end. */
  closing: string | undefined

  constructor(
    private readonly turn: Turn,
    private readonly meter: Meter,
  ) {}

  readonly isRecall = (name: string): boolean =>
    this.turn.recall !== null && name === this.turn.recall.name

  /** 'untouched': nothing recalled, the answer goes as it came; 'again': ask again; 'done'. */
  async step(round: number, end: RoundEnd): Promise<'untouched' | 'again' | 'done'> {
    const { turn, meter } = this
    meter.usage = sumUsage(meter.usage, end.usage)
    meter.timings = sumUsage(meter.timings, end.timings)
    const recalls = end.parts.flatMap((part) =>
      part.call && this.isRecall(part.call.function.name) ? [part.call] : [],
    )
    if (round === 0 && recalls.length === 0) return 'untouched'
    this.usage = roundsUsage(this.usage, end.usage)
    const shown = end.parts.filter((part) => !part.call || !this.isRecall(part.call.function.name))
    this.visible.push(...shown)
    const said = turn.door.assistantItems(end.parts)
    this.recalled = recalls.length > 0
    const recall = turn.recall // not null when there are recalls (isRecall)
    if (recalls.length > 0 && recall) {
      meter.recalls += recalls.length
      // A retried round's call gets the answer (and id) it got before; another call under a
      // reused id (servers that name every call `call_0`) gets its own.
      const claims = recalls.map((call, k) =>
        shortHash(
          `${turn.place.index}\u0000${turn.place.previous}\u0000${round}\u0000${k}\u0000${call.id}\u0000${call.function.arguments}`,
        ),
      )
      // The last round the proxy answers says so, and the model is asked once more: a model
      // that goes on recalling would otherwise end its turn with nothing to show.
      const maxRounds = recall.maxRounds
      const replies = await answerRecalls(
        recalls,
        claims,
        turn.session.ensure(),
        turn.store,
        turn.rules,
        turn.nextIds,
        recall.limits,
        round + 1 === maxRounds ? recall.lastRoundNote : undefined,
      )
      const answered = turn.door.replyItems(replies)
      this.#hidden.push(...said, ...answered)
      // Calls past max_calls got the refusal: an operator sees the model flood.
      const refused = Math.max(0, recalls.length - recall.limits.maxCalls)
      turn.log.info('recall-answered', {
        calls: recalls.length,
        ...(refused > 0 ? { refused } : {}),
        round: round + 1,
        door: turn.door.name,
      })
      const lastRound = round >= maxRounds
      if (!shown.some((part) => part.call)) {
        if (!lastRound) {
          this.extra.push(...said, ...answered)
          return 'again'
        }
        // An empty turn: agents ask again (Qwen Code the whole turn, four times), or put a
        // text of their own in its place, which no longer matches the exchange recorded.
        this.closing = recall.limitAnswer
        if (this.closing !== undefined) this.visible.push(turn.door.textPart(this.closing))
      }
    } else this.#hidden.push(...said)
    const visibleItems = turn.door.assistantItems(this.visible)
    await recordAnswer(turn.door, turn.place, visibleItems, this.#hidden, turn.session, turn.store)
    return 'done'
  }
}

/** What goes back to the client: the upstream's status, headers and body. */
export interface Answer {
  readonly status: number
  readonly headers: Record<string, string | string[]>
  readonly body: string
}

/**
 * The upstream's whole body. A body that breaks off (a reset) or stalls past the timeout is the
 * upstream's failure, 502 or 504, like one that never came.
 */
async function readAll(turn: Turn, response: UpstreamResponse): Promise<string> {
  try {
    return await text(response.body)
  } catch (error) {
    throw turn.upstream.mapError(error, turn.signal)
  }
}

/** A whole (non-streaming) answer through the recall loop. */
export async function completeAnswer(turn: Turn, meter: Meter): Promise<Answer> {
  const loop = new RecallLoop(turn, meter)
  for (let round = 0; ; round++) {
    const response = await (round === 0 ? send(turn) : sendRound(turn, loop.extra))
    const raw = await readAll(turn, response)
    const answer = { status: response.status, headers: response.headers, body: raw }
    const json = response.status === 200 ? parseAnswer(raw) : undefined
    const end = json === undefined ? undefined : turn.door.readAnswer(json)
    // A recall round's 200 that cannot be read broke off (a body framed by the connection's
    // close): the proxy's own request failed, and its bytes are no answer to the client's.
    if (!end && round > 0 && response.status === 200)
      throw new LembasError('upstream_bad_response', 'the upstream answer after a recall broke off')
    if (!end) return answer // not ours to read: as it came
    const step = await loop.step(round, end)
    if (step === 'untouched') return answer // the common case: untouched bytes
    if (step === 'again') continue
    const body = turn.door.clientAnswer(json as Json, loop.visible, loop.recalled, loop.usage)
    return { ...answer, body: JSON.stringify(body) }
  }
}

/**
 * A streamed answer through the recall loop, as SSE text in the door's grammar, from the first
 * upstream response (a 200). An upstream failure mid-way becomes the door's error event.
 */
export async function* streamAnswer(
  turn: Turn,
  first: UpstreamResponse,
  meter: Meter,
): AsyncGenerator<string> {
  const loop = new RecallLoop(turn, meter)
  const stream = turn.door.openStream(turn.request, loop.isRecall)
  /** The door's error event that ends the stream, counted and logged. */
  const failure = (kind: ErrorKind, message: string, own?: UpstreamError, status?: number) => {
    meter.failed = true
    // The upstream's own message can echo the key it was sent ("Incorrect API key provided:
    // sk-…"): only the proxy's own messages are logged.
    const said = own === undefined ? { message } : {}
    turn.log.warn('stream-failed', { kind, ...said, door: turn.door.name, status })
    return stream.error(kind, message, own)
  }
  let response = first
  try {
    for (let round = 0; ; round++) {
      for await (const event of decodeSse(response.body)) {
        const { out, stop } = stream.take(event)
        yield* out
        if (stop) {
          meter.failed = true // the upstream's own error event, as it came
          return
        }
      }
      const end = stream.endRound()
      // Cut before its end (a dropped connection, a proxy's HTML page): the upstream failed.
      if (!end.complete)
        throw new LembasError('upstream_bad_response', 'the upstream stream ended before its end')
      yield* end.out ?? []
      const step = await loop.step(round, end)
      if (step === 'untouched') return yield* end.held
      if (step === 'done') {
        if (loop.closing !== undefined) yield* stream.say(loop.closing)
        return yield* stream.close(loop.visible, loop.usage)
      }
      response = await sendRound(turn, loop.extra)
      if (response.status !== 200) {
        // The client's 200 is gone already: its error event says what the upstream said.
        const detail = await readAll(turn, response)
        const own = upstreamError(parseAnswer(detail))
        const message =
          own?.message ??
          `upstream answered ${response.status} after a recall: ${detail.slice(0, 500)}`
        const status = response.status
        return yield failure('upstream_bad_response', message, { ...own, status }, status)
      }
    }
  } catch (error) {
    if (turn.signal.aborted) return
    const mapped = error instanceof LembasError ? error : turn.upstream.mapError(error, turn.signal)
    const kind = mapped instanceof LembasError ? mapped.kind : 'upstream_bad_response'
    const message = mapped instanceof Error ? mapped.message : 'the upstream stream failed'
    yield failure(kind, message)
  }
}
