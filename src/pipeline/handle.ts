import { LembasError } from '../errors.js'
import { warnOnce, type Logger } from '../log.js'
import type { Memo } from '../memo.js'
import { upstreamUsage, type Meter, type RebuildCounts, type StatsSink } from '../stats/index.js'
import { isAbortError } from '../upstream/index.js'
import type { Upstream, UpstreamResponse } from '../upstream/index.js'
import type { Door, Json } from './door.js'
import { sessionLabel, type SessionLabel } from '../stats/label.js'
import type { SessionRef } from '../session/find.js'
import type { Readable } from 'node:stream'
import { bodyBytes } from './body.js'
import { watchUsage } from './observe.js'
import { completeAnswer, send, streamAnswer, type Turn } from './loop.js'
import type { ColdCollector } from '../http/cold-collect.js'
import type { ByteBudget } from './admission.js'
import type { PrefixWatch } from './splice.js'
import { prepare, type PrepareDeps, type Prepared } from './prepare.js'

export interface PipelineDeps extends PrepareDeps {
  readonly upstream: Upstream
  readonly log: Logger
  /** Sees each chat request as received and as sent upstream (`--record`). */
  readonly recorder?: Recorder | undefined
  /** Sees each finished request (`GET /stats`, `GET /metrics`). */
  readonly stats?: StatsSink | undefined
  /**
   * `--observe`: every request goes upstream byte for byte (no prompt block, no recall); the
   * rebuild runs in shadow, for the stats only ("would save").
   */
  readonly observe?: boolean | undefined
  /** `--cold-bodies-mb`: bodies that will be parsed whole, let in a few at a time. */
  readonly coldBodies?: ByteBudget | undefined
  /** `--cold-collect-kb`: a full collection after each large body parsed whole. */
  readonly coldCollector?: ColdCollector | undefined
}

/** Where `--record` writes: the client's body and the upstream body, per request. */
export interface Recorder {
  record(entry: {
    readonly door: Door['name']
    readonly session: string | undefined
    readonly received: string
    readonly sent: string
  }): void
}

/** A reply for the HTTP layer: a whole body, an SSE stream, or the upstream's own response. */
export type Reply =
  | {
      readonly kind: 'text'
      readonly status: number
      readonly headers: Record<string, string | string[]>
      readonly body: string
    }
  | {
      readonly kind: 'sse'
      readonly headers: Record<string, string | string[]>
      readonly events: AsyncGenerator<string>
    }
  | {
      readonly kind: 'upstream'
      readonly response: Omit<UpstreamResponse, 'body'> & { readonly body: Readable }
      /** Settles when the body has gone through (`--observe` reads its usage on the way). */
      readonly ended?: Promise<void>
    }

export interface RequestInput {
  /** The client's body, as it came (decoded, when it came compressed). */
  readonly rawBody: Buffer
  /**
   * The body as the client sent it, when it came compressed, and its `Content-Encoding`: what
   * goes upstream where the client's own bytes go (no tools, `--observe`).
   */
  readonly coded?: { readonly bytes: Buffer; readonly encoding: string } | undefined
  /** The client's headers: identity, session and compaction signals. */
  readonly clientHeaders: Headers
  /** The headers that go upstream (allowlisted). */
  readonly headers: Record<string, string>
  readonly signal: AbortSignal
  /** Digests of the body's remembered prefixes, taken while it arrived. */
  readonly prefixes?: PrefixWatch | undefined
  /** Called once the body is parsed: its room in `--cold-bodies-mb` goes to the next. */
  readonly parsed?: (() => void) | undefined
  /** The compaction header's value, when the client sent it. */
  readonly compactionSignal?: string | undefined
  /** The request's query string (`?beta=true`, as Claude Code sends it), forwarded as it came. */
  readonly query?: string | undefined
}

/**
 * One request through any door: find the session, rebuild the history (known results as first
 * sent, new ones rendered and stored), add recall, forward, and answer recall calls.
 */
export async function handle(door: Door, input: RequestInput, deps: PipelineDeps): Promise<Reply> {
  const started = Date.now()
  const seen: Seen = { door: door.name, meter: { recalls: 0 }, stream: false, messages: 0 }
  let reply: Reply
  try {
    reply = await run(door, input, deps, seen, started)
  } catch (error) {
    const status = isAbortError(error) ? 499 : error instanceof LembasError ? error.status : 500
    const upstreamError = error instanceof LembasError && error.kind.startsWith('upstream_')
    finished(deps, seen, started, status, upstreamError)
    throw error
  }
  if (reply.kind === 'sse') {
    const events = reply.events
    // A stream the client left before its end is its abort, as for a whole answer (499).
    const end = () => finished(deps, seen, started, input.signal.aborted ? 499 : 200)
    return { ...reply, events: untilEnd(events, end) }
  }
  const status = reply.kind === 'text' ? reply.status : reply.response.status
  if (reply.kind === 'upstream' && reply.ended)
    void reply.ended.then(() => finished(deps, seen, started, status, status >= 400))
  else finished(deps, seen, started, status, status >= 400)
  return reply
}

/** What is known of a request so far, for its log line and its stats. */
interface Seen {
  readonly door: Door['name']
  /** Read at the end: a recall may create the session's scope. */
  session?: SessionRef | undefined
  rebuild?: RebuildCounts | undefined
  label?: SessionLabel | undefined
  stream: boolean
  messages: number
  meter: Meter
}

/** A stream is finished when its generator is: done, failed, or closed by the client. */
async function* untilEnd(events: AsyncGenerator<string>, done: () => void): AsyncGenerator<string> {
  try {
    yield* events
  } finally {
    done()
  }
}

/** A known tool answered unlike its profile: one warn line per tool and process, no content. */
function warnDrift(log: Logger, warned: Memo<true>, rebuild: RebuildCounts | undefined): void {
  for (const { tool, expected } of rebuild?.unrecognised ?? [])
    warnOnce(log, warned, 'unrecognised-result', tool, { tool, expected })
}

/** The request's one info line, and its record in the stats. Counts and ids only. */
function finished(
  deps: PipelineDeps,
  seen: Seen,
  started: number,
  status: number,
  upstreamError = false,
): void {
  const ms = Date.now() - started
  const { meter, rebuild } = seen
  const failed = upstreamError || meter.failed === true
  const usage = upstreamUsage(meter.usage, meter.timings)
  warnDrift(deps.log, deps.memos.warned, rebuild)
  deps.log.info('request', {
    door: seen.door,
    session: seen.session?.scope,
    messages: seen.messages,
    newResults: rebuild?.newResults ?? 0,
    stubs: rebuild?.stubs ?? 0,
    dedupes: rebuild?.dedupes ?? 0,
    caps: rebuild?.caps ?? 0,
    charsSaved: rebuild?.charsSaved ?? 0,
    recalls: meter.recalls,
    status,
    ...(meter.failed ? { failed: true } : {}),
    ms,
    stream: seen.stream,
    spliced: rebuild?.spliced ?? 0,
    promptTokens: usage.promptTokens,
    cachedTokens: usage.cachedTokens,
    ...(rebuild?.cacheBreak ? { cacheBreak: rebuild.cacheBreak } : {}),
    ...(rebuild?.newSummaries ? { compacted: rebuild.newSummaries } : {}),
  })
  deps.stats?.recordRequest({
    door: seen.door,
    session: seen.session?.scope,
    rebuild,
    status,
    ms,
    stream: seen.stream,
    usage: meter.usage,
    timings: meter.timings,
    recalls: meter.recalls,
    upstreamError: failed,
    label: seen.label,
  })
}

/** `--observe`: what the rebuild would have done is counted; the client's bytes are what went. */
function observed(
  deps: PipelineDeps,
  seen: Seen,
  door: Door,
  input: RequestInput,
  prepared: Extract<Prepared, { kind: 'rebuilt' }>,
): void {
  seen.messages = prepared.items
  seen.session = prepared.session
  seen.rebuild = prepared.stats
  if (!deps.recorder) return
  const received = input.rawBody.toString('utf8')
  deps.recorder.record({
    door: door.name,
    session: prepared.session.scope,
    received,
    sent: received,
  })
}

async function run(
  door: Door,
  input: RequestInput,
  deps: PipelineDeps,
  seen: Seen,
  started: number,
): Promise<Reply> {
  // The door's path with the client's query string (Claude Code's `?beta=true`), every round.
  const upstreamPath = door.path + (input.query ?? '')
  if (deps.observe) return observe(door, input, deps, seen, upstreamPath)
  const prepared = await prepareFor(door, input, deps)
  seen.stream = door.stream(prepared.request)
  seen.label = sessionLabel(prepared.request, input.clientHeaders.get('user-agent'))
  if (prepared.kind === 'plain') {
    // No tools: nothing to shape, no recall to offer; the client's bytes go.
    seen.messages = itemCount(prepared.request, door)
    return { kind: 'upstream', response: await forwardAsSent(input, deps, upstreamPath) }
  }
  const { request, session } = prepared
  seen.messages = prepared.items
  seen.session = session
  seen.rebuild = prepared.stats
  if (prepared.recall === 'client') {
    deps.log.warn('recall-left-to-client', {
      reason: `the client defines a tool named ${deps.recall.name}`,
    })
  }
  deps.recorder?.record({
    door: door.name,
    session: session.scope,
    received: input.rawBody.toString('utf8'),
    sent: bodyBytes(prepared.body).toString('utf8'),
  })
  deps.log.debug('rebuilt', {
    door: door.name,
    session: session.scope,
    ...prepared.stats,
    stream: seen.stream,
    rebuild_ms: Date.now() - started,
  })
  const turn: Turn = {
    door,
    request,
    body: prepared.body,
    headers: input.headers,
    session,
    place: prepared.place,
    signal: input.signal,
    recall: prepared.recall === 'proxy' ? deps.recall : null,
    upstream: deps.upstream.forPath(door.path),
    path: upstreamPath,
    store: deps.store,
    nextIds: deps.memos.nextIds,
    rules: deps.rules,
    log: deps.log,
  }
  if (!seen.stream) return { kind: 'text', ...(await completeAnswer(turn, seen.meter)) }
  const first = await send(turn)
  if (first.status !== 200) return { kind: 'upstream', response: first }
  return { kind: 'sse', headers: first.headers, events: streamAnswer(turn, first, seen.meter) }
}

/** The request read and shaped; its room in `--cold-bodies-mb` given back either way. */
function prepareFor(door: Door, input: RequestInput, deps: PipelineDeps): Promise<Prepared> {
  return prepare(
    {
      door,
      bytes: input.rawBody,
      headers: input.clientHeaders,
      compactionSignal: input.compactionSignal,
      prefixes: input.prefixes,
    },
    deps,
  ).finally(input.parsed)
}

/** The client's bytes upstream, as they came (coded as they came too). */
function forwardAsSent(
  input: RequestInput,
  deps: PipelineDeps,
  path: string,
): Promise<UpstreamResponse> {
  const coded = input.coded
  return deps.upstream.send({
    method: 'POST',
    path,
    headers: {
      ...input.headers,
      'content-type': 'application/json',
      ...(coded ? { 'content-encoding': coded.encoding } : {}),
    },
    body: coded?.bytes ?? input.rawBody,
    signal: input.signal,
  })
}

/**
 * `--observe`: the client's bytes go upstream at once, and the request is shaped beside them, in
 * shadow, for the stats. What fails there (a store down, a SQLite file another process holds
 * locked) is logged and never reaches the agent: a first day without risk.
 */
async function observe(
  door: Door,
  input: RequestInput,
  deps: PipelineDeps,
  seen: Seen,
  path: string,
): Promise<Reply> {
  const shadow = prepareFor(door, input, deps).then(
    (prepared) => {
      seen.stream = door.stream(prepared.request)
      seen.label = sessionLabel(prepared.request, input.clientHeaders.get('user-agent'))
      if (prepared.kind === 'rebuilt') observed(deps, seen, door, input, prepared)
      else seen.messages = itemCount(prepared.request, door)
      return prepared.request
    },
    (error: unknown) => {
      if (!isAbortError(error))
        deps.log.warn('observe-shadow-failed', {
          door: door.name,
          kind: error instanceof LembasError ? error.kind : 'internal',
          message: error instanceof Error ? error.message : String(error),
        })
      return undefined
    },
  )
  let response: UpstreamResponse
  try {
    response = await forwardAsSent(input, deps, path)
  } catch (error) {
    await shadow // its line and stats first: the request's own goes after it
    throw error
  }
  if (response.status !== 200) {
    await shadow
    return { kind: 'upstream', response }
  }
  const watched = watchUsage(door, shadow, response, seen.meter)
  const ended = Promise.all([watched.ended, shadow]).then(() => undefined)
  return { kind: 'upstream', response: { ...response, body: watched.body }, ended }
}

/** The items a request carries (its messages, or its input), whether or not it is shaped. */
function itemCount(request: Json, door: Door): number {
  const items = (request as Record<string, unknown>)[door.arrayKey]
  if (typeof items === 'string') return 1 // the Responses API's input as one text
  return Array.isArray(items) ? items.length : 0
}
