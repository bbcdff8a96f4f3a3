/**
 * `lembas-proxy replay`: each session's client requests, in order, through the real proxy (the
 * app in this process, a memory store, a loopback upstream that answers "ok") twice, as it runs
 * by default and with `--elide` (a second app, its own store), and for each request the input
 * tokens four ways: as the client sent it (no proxy), as each proxy sent it upstream, and as an
 * agent that masks its old tool results would have sent it (the baseline). The part of each
 * request that repeats the start of the previous one is what a prompt cache can serve: it is
 * priced at the cached rate, the rest at the full rate plus the cache-write premium.
 */
import { loadLoop } from '../config/loop.js'
import { FLAGS } from '../config/flags.js'
import { elideSettings, pipelineSettings } from '../config/pipeline.js'
import { createApp } from '../http/app.js'
import { silentLogger } from '../log.js'
import type { ElideSettings } from '../pipeline/elide.js'
import { createStats } from '../stats/index.js'
import { createStore, type Store } from '../store/index.js'
import { createUpstream } from '../upstream/index.js'
import { isRecord } from '../wire/chat.js'
import {
  actionReader,
  addActions,
  noActions,
  savedOnResults,
  inputStandInCounter,
  standInCounter,
  toolCallIds,
  type Actions,
} from './actions.js'
import { maskOldToolResults, type MaskOptions } from './baseline.js'
import { startAnsweringUpstream } from './answering.js'
import { readEntries, type DoorName, type ReplaySource, type SkippedLine } from './input.js'
import { DOORS, type Door } from '../doors/index.js'
import { commonPrefix, TokenCounter, type TokenSequence } from './tokens.js'

export interface ReplayOptions {
  /** Dollars per million uncached input tokens. */
  readonly pricePerMTok: number
  /** The share of that price taken off a cached token: 0.9 bills it at 10 %. */
  readonly cachedDiscount: number
  /**
   * What writing the prompt cache costs on top of an input token (Anthropic: 0.25): every
   * uncached token is billed at (1 + it) × the price, on every side; the elided side's batches
   * weigh it too.
   */
  readonly cacheWritePremium: number
  readonly mask: MaskOptions
  /** The elided side's `--elide-threshold`, `--elide-keep` and `--elide-horizon`. */
  readonly elide: ElideOptions
}

export interface ElideOptions {
  readonly threshold: number
  readonly keep: number
  readonly horizon: number
  /** `--elide-inputs`: the elided side's batches take their calls' long strings too. */
  readonly inputs: boolean
}

/** The proxy's own defaults (src/config/flags.ts) wherever a replay flag is one of its flags. */
export const DEFAULT_OPTIONS: ReplayOptions = {
  pricePerMTok: 3,
  cachedDiscount: Number(FLAGS['cached-discount'].default),
  cacheWritePremium: Number(FLAGS['cache-write-premium'].default),
  mask: { keep: 2, unit: 'user' },
  elide: {
    threshold: Number(FLAGS['elide-threshold'].default),
    keep: Number(FLAGS['elide-keep'].default),
    horizon: Number(FLAGS['elide-horizon'].default),
    inputs: false,
  },
}

/** The four ways a request could have gone upstream. */
export const SIDES = ['client', 'proxy', 'elided', 'masked'] as const
export type Side = (typeof SIDES)[number]

/** One request, one side. */
export interface RequestSide {
  readonly tokens: number
  /** Tokens at its start that repeat the start of the previous request of the session. */
  readonly cached: number
  /** Tokens of the previous request of the session (null: the first). */
  readonly previous: number | null
  /** Share of the previous request's tokens that this one repeats from its start (null: first). */
  readonly kept: number | null
  readonly cost: number
}

export interface RequestReport {
  readonly file: string
  readonly line: number
  readonly status: number
  readonly error?: string
  readonly tools: boolean
  readonly sides?: Record<Side, RequestSide>
  readonly actions?: Actions
  /** Results the elided side sent as stand-ins in this request. */
  readonly elided?: number
}

export interface SideTotals {
  tokens: number
  cached: number
  /** Σ tokens of the previous request, over the requests that have one. */
  previousTokens: number
  /** Requests (after a session's first) that do not repeat all of the previous one. */
  breaks: number
  /** Tokens of the largest request: the context window the session needs. */
  largest: number
  cost: number
}

/** What `--elide` did on the elided side. */
export interface Elisions {
  /** Requests that elided a new batch of old results. */
  batches: number
  /** Results replaced by a stand-in, over the session's requests (a session's last count). */
  results: number
  /** Calls whose long strings were replaced (`--elide-inputs`), counted the same way. */
  inputs: number
}

export interface Totals {
  requests: number
  failed: number
  sides: Record<Side, SideTotals>
  actions: Actions
  elisions: Elisions
}

export interface SessionReport {
  readonly name: string
  readonly totals: Totals
  readonly requests: RequestReport[]
}

export interface ReplayReport {
  readonly options: ReplayOptions
  readonly sessions: SessionReport[]
  readonly total: Totals
  readonly skipped: SkippedLine[]
}

interface SessionState {
  readonly report: SessionReport
  /** Where its first line stands in the files as given: the report lists sessions so. */
  readonly first: readonly [source: number, line: number]
  readonly header: string
  previous?: Record<Side, TokenSequence>
  knownTools: Set<string>
  /** Stand-ins in the elided side's previous request, in results and in calls. */
  elided: number
  elidedInputs: number
}

type App = ReturnType<typeof createApp>

const DAY_MS = 86_400_000
const SESSION_HEADER = 'x-lembas-replay-session'

export async function replay(
  sources: readonly ReplaySource[],
  options: ReplayOptions = DEFAULT_OPTIONS,
): Promise<ReplayReport> {
  const loop = loadLoop()
  const upstreamServer = await startAnsweringUpstream()
  const upstream = createUpstream({ baseUrl: upstreamServer.url, timeoutMs: 600_000 })
  const elide = elideSettings({
    elide: true,
    elideThreshold: options.elide.threshold,
    elideKeep: options.elide.keep,
    elideHorizon: options.elide.horizon,
    elideInputs: options.elide.inputs,
    cachedDiscount: options.cachedDiscount,
    cacheWritePremium: options.cacheWritePremium,
  })!
  const stores: Store[] = []
  // The default side's stats count the results it did not recognise.
  const stats = createStats()
  const startApp = async (settings: ElideSettings | undefined): Promise<App> => {
    const store = await createStore('memory:', { idleTtlMs: 365 * DAY_MS })
    stores.push(store)
    return createApp({
      ...pipelineSettings(loop, { sessionHeader: SESSION_HEADER, elide: settings }),
      store,
      upstream,
      ...(settings ? {} : { stats }),
      log: silentLogger,
      options: { compactionHeader: 'x-lembas-compaction', maxBodyBytes: 2 ** 30 },
    })
  }
  const counter = new TokenCounter()
  const readActions = actionReader(loop.context)
  const countStandIns = standInCounter(elide.standIn)
  const countInputStandIns = inputStandInCounter(loop.proxy.elide.input_stand_in)
  const sessions = new Map<string, SessionState>()
  const skipped: SkippedLine[] = []
  try {
    const proxyApp = await startApp(undefined)
    const elidedApp = await startApp(elide)
    for await (const entry of readEntries(sources, (line) => skipped.push(line))) {
      let state = sessions.get(entry.session)
      if (!state) {
        state = {
          // Chat is the default door; another one is named with the session.
          report: {
            name: entry.door === 'chat' ? entry.name : `${entry.name} (/v1/${entry.door})`,
            totals: emptyTotals(),
            requests: [],
          },
          first: [entry.source, entry.line],
          header: `replay-${sessions.size + 1}`,
          knownTools: new Set(),
          elided: 0,
          elidedInputs: 0,
        }
        sessions.set(entry.session, state)
      }
      // The same request to the proxy as it runs by default, then to the one with --elide.
      const before = stats.snapshot().totals
      const door = doorNamed(entry.door)
      const proxied = await send(proxyApp, door, state.header, entry.body)
      const elided = await send(elidedApp, door, state.header, entry.body)
      const client = measured(door, JSON.parse(entry.body) as Record<string, unknown>)
      const where = { file: entry.file, line: entry.line, tools: hasTools(client) }
      if ('error' in proxied || 'error' in elided) {
        const failed = 'error' in proxied ? proxied : (elided as Failure)
        const error = ('error' in proxied ? '' : 'with --elide: ') + failed.error
        state.report.requests.push({ ...where, status: failed.status, error })
        state.report.totals.failed++
        continue
      }
      const clientMessages = client.messages
      const proxyBody = measured(door, proxied.body)
      const elidedBody = measured(door, elided.body)
      const sequences: Record<Side, TokenSequence> = {
        client: counter.sequence(client),
        proxy: counter.sequence(proxyBody),
        elided: counter.sequence(elidedBody),
        masked: counter.sequence({
          tools: client.tools,
          messages: maskOldToolResults(clientMessages, options.mask),
        }),
      }
      const sides = {} as Record<Side, RequestSide>
      for (const side of SIDES)
        sides[side] = measure(sequences[side], state.previous?.[side], options)
      const sentMessages = proxyBody.messages
      const actions = {
        ...readActions(sentMessages, state.knownTools),
        ...savedOnResults(clientMessages, sentMessages, state.knownTools, (text) =>
          counter.count(text),
        ),
        unrecognised: stats.snapshot().totals.unrecognised - before.unrecognised,
        clientBreaks: stats.snapshot().totals.clientBreaks - before.clientBreaks,
      }
      state.knownTools = toolCallIds(sentMessages)
      state.previous = sequences
      const standIns = countStandIns(elidedBody.messages)
      const inputStandIns = countInputStandIns(elidedBody.messages)
      const elisions: Elisions = {
        batches: standIns > state.elided || inputStandIns > state.elidedInputs ? 1 : 0,
        results: standIns - state.elided,
        inputs: inputStandIns - state.elidedInputs,
      }
      state.elided = standIns
      state.elidedInputs = inputStandIns
      state.report.requests.push({ ...where, status: 200, sides, actions, elided: standIns })
      addRequest(state.report.totals, sides, actions, elisions)
    }
  } finally {
    await upstream.close()
    await upstreamServer.close()
    await Promise.all(stores.map((store) => store.close()))
  }
  const reports = [...sessions.values()]
    .sort((a, b) => a.first[0] - b.first[0] || a.first[1] - b.first[1])
    .map((state) => state.report)
  const total = emptyTotals()
  for (const session of reports) addTotals(total, session.totals)
  return { options, sessions: reports, total, skipped }

  /** One client request through `app`: the body it sent upstream, or why it failed. */
  async function send(app: App, door: Door, header: string, body: string): Promise<Sent | Failure> {
    const response = await app.fetch(
      new Request(`http://replay.invalid/v1${door.path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer lembas-replay',
          [SESSION_HEADER]: header,
        },
        body,
      }),
    )
    const answer = await response.text()
    const sent = upstreamServer.take()
    if (response.status !== 200 || sent[0] === undefined)
      return {
        status: response.status,
        error: errorMessage(answer) ?? `status ${response.status}`,
      }
    return { body: JSON.parse(sent[0]) as Record<string, unknown> }
  }
}

interface Sent {
  readonly body: Record<string, unknown>
}

interface Failure {
  readonly status: number
  readonly error: string
}

function doorNamed(name: DoorName): Door {
  return DOORS.find((door) => door.name === name)!
}

/** What replay counts of a body: its tools, then its messages (a chat body's own). */
interface Measured {
  readonly tools: unknown
  readonly messages: unknown[]
}

/**
 * A body as replay measures it. A chat body is counted as it is; a Messages or Responses body
 * through its door's own view, as chat messages: the system prompt (where the prompt block
 * goes), then each message, tool call and result, with the tools as chat definitions (recall
 * among them). Every side of a request is measured the same way, so they compare.
 */
function measured(door: Door, body: Record<string, unknown>): Measured {
  if (door.name === 'chat')
    return { tools: body.tools, messages: Array.isArray(body.messages) ? body.messages : [] }
  const raw: unknown = body[door.arrayKey]
  const items = Array.isArray(raw) ? raw.filter(isRecord) : []
  const view = door.toView(items)
  const system = door.systemText(body, view)
  const tools = door.definitions(body)
  return {
    tools: tools.length > 0 ? tools : undefined,
    messages: [...(system === '' ? [] : [{ role: 'system', content: system }]), ...view.messages],
  }
}

function measure(
  sequence: TokenSequence,
  previous: TokenSequence | undefined,
  options: ReplayOptions,
): RequestSide {
  const cached = previous ? commonPrefix(previous, sequence) : 0
  const kept = previous ? (previous.total === 0 ? 1 : cached / previous.total) : null
  return {
    tokens: sequence.total,
    cached,
    previous: previous ? previous.total : null,
    kept,
    cost: price(sequence.total, cached, options),
  }
}

/**
 * Dollars for `tokens` input tokens of which `cached` are served from the cache; the others are
 * written to it, at the cache-write premium.
 */
export function price(
  tokens: number,
  cached: number,
  options: Pick<ReplayOptions, 'pricePerMTok' | 'cachedDiscount'> & {
    readonly cacheWritePremium?: number
  },
): number {
  const uncached = (tokens - cached) * (1 + (options.cacheWritePremium ?? 0))
  return ((uncached + cached * (1 - options.cachedDiscount)) * options.pricePerMTok) / 1_000_000
}

function emptySide(): SideTotals {
  return { tokens: 0, cached: 0, previousTokens: 0, breaks: 0, largest: 0, cost: 0 }
}

function emptyTotals(): Totals {
  return {
    requests: 0,
    failed: 0,
    sides: { client: emptySide(), proxy: emptySide(), elided: emptySide(), masked: emptySide() },
    actions: noActions(),
    elisions: { batches: 0, results: 0, inputs: 0 },
  }
}

function addRequest(
  totals: Totals,
  sides: Record<Side, RequestSide>,
  actions: Actions,
  elisions: Elisions,
): void {
  totals.requests++
  totals.elisions.batches += elisions.batches
  totals.elisions.results += elisions.results
  totals.elisions.inputs += elisions.inputs
  for (const side of SIDES) {
    const into = totals.sides[side]
    const one = sides[side]
    into.tokens += one.tokens
    into.cached += one.cached
    into.cost += one.cost
    into.largest = Math.max(into.largest, one.tokens)
    if (one.previous !== null && one.kept !== null) {
      into.previousTokens += one.previous
      if (one.kept < 1) into.breaks++
    }
  }
  addActions(totals.actions, actions)
}

function addTotals(into: Totals, more: Totals): void {
  into.requests += more.requests
  into.failed += more.failed
  for (const side of SIDES) {
    const a = into.sides[side]
    const b = more.sides[side]
    a.tokens += b.tokens
    a.cached += b.cached
    a.previousTokens += b.previousTokens
    a.breaks += b.breaks
    a.largest = Math.max(a.largest, b.largest)
    a.cost += b.cost
  }
  addActions(into.actions, more.actions)
  into.elisions.batches += more.elisions.batches
  into.elisions.results += more.elisions.results
  into.elisions.inputs += more.elisions.inputs
}

/**
 * Σ cached / Σ previous request's tokens: 1 when every request repeats all of the one before it
 * (a session's first request caches nothing and has no previous one).
 */
export function keptShare(side: SideTotals): number | null {
  return side.previousTokens === 0 ? null : side.cached / side.previousTokens
}

function hasTools(body: Measured): boolean {
  return Array.isArray(body.tools) && body.tools.length > 0
}

function errorMessage(text: string): string | undefined {
  try {
    const json: unknown = JSON.parse(text)
    if (isRecord(json) && isRecord(json.error) && typeof json.error.message === 'string')
      return json.error.message
  } catch {
    // not JSON
  }
  return undefined
}
