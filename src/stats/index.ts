import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { Lru } from '../lru.js'
import type { CacheSize } from '../memo.js'
import type { CacheBreak } from '../pipeline/breaks.js'
import type { SessionLabel } from './label.js'
import { upstreamUsage, type UpstreamUsage } from './usage.js'

export { upstreamUsage, type UpstreamUsage } from './usage.js'

/** What the rebuild did to one request (HistoryStats and the fast path's flag). */
export interface RebuildCounts {
  readonly newResults: number
  readonly stubs: number
  readonly dedupes: number
  readonly caps: number
  readonly charsSaved: number
  readonly spliced?: number
  /** The request's last new results: id, how each was shown, characters before and after. */
  readonly results?: readonly NewResultFigure[]
  /** Results of known agent tools not answered as their profile expects: the tool, what was expected. */
  readonly unrecognised?: readonly { readonly tool: string; readonly expected: string }[]
  /** Where the request stopped repeating the session's previous one, and who changed it. */
  readonly cacheBreak?: CacheBreak | undefined
  /**
   * Over every tool message the request carries: the client's characters less those sent (and,
   * with `--elide-inputs`, over the calls whose strings a batch elided).
   */
  readonly carriedChars?: number | undefined
  /** The prompt block and the recall tool the proxy added, in characters. */
  readonly overheadChars?: number | undefined
  /** Summaries seen for the first time: the agent compacted (the table follows each). */
  readonly newSummaries?: number | undefined
}

/** `--price-per-mtok` with `--cached-discount` and `--cache-write-premium`: money, when set. */
export interface Prices {
  readonly perMTok: number
  readonly cachedDiscount: number
  readonly writePremium: number
}

/** A break of the prompt cache as /stats lists it: when, where, by whom, what it cost. */
export interface BreakFigure extends CacheBreak {
  readonly at: string
}

/** Breaks each session lists, newest last. */
const SESSION_BREAKS = 10

/** A new result as the dashboard lists it. */
export interface NewResultFigure {
  readonly id: string
  readonly kind: string
  readonly charsBefore: number
  readonly charsAfter: number
}

/** A recent request that rendered new results. */
export interface RecentRequest {
  readonly at: string
  readonly session: string | undefined
  readonly door: string
  readonly results: readonly NewResultFigure[]
}

/** Recent requests with new results that /stats lists, newest first. */
const RECENT_REQUESTS = 20

/** One finished request, as the pipeline saw it. */
export interface FinishedRequest {
  /** The front door: chat, responses or messages. */
  readonly door: string
  readonly session: string | undefined
  /** Absent for a plain chat (no tools): nothing was rebuilt. */
  readonly rebuild?: RebuildCounts | undefined
  /** The status the client got (200 for a stream that started, even if it failed later). */
  readonly status: number
  readonly ms: number
  readonly stream: boolean
  /** The upstream's `usage` (summed over recall rounds), as it came. */
  readonly usage?: unknown
  /** llama.cpp's `timings`, when the upstream sent them. */
  readonly timings?: unknown
  /** Recall calls the proxy answered. */
  readonly recalls: number
  /** The upstream failed: an error status, unreachable, a timeout or a broken stream. */
  readonly upstreamError: boolean
  /** What the session is recognised by: agent, model, first words. */
  readonly label?: SessionLabel | undefined
}

/** Totals for one session, or for the whole process. */
export interface Figures {
  requests: number
  upstreamErrors: number
  newResults: number
  stubs: number
  dedupes: number
  caps: number
  charsSaved: number
  /** charsSaved / 4, rounded: an estimate, not a tokenizer's count. */
  tokensSavedEstimate: number
  /**
   * Input tokens the requests did not carry (characters / 4): every shortened result counts in
   * each request that carries it, less the prompt block and recall tool each request carries.
   */
  inputTokensSaved: number
  /** Those tokens in dollars at `prices` (new ones uncached, the rest cached); null without. */
  moneySaved: number | null
  recalls: number
  /** Results of known agent tools not as their profile expects: the agent's output drifted. */
  unrecognised: number
  /** The agent's compactions the proxy found (each summary followed by its table). */
  compactions: number
  /** Requests where the client changed what it had sent before: the prompt cache broke there. */
  clientBreaks: number
  /** The previous requests' tokens after those changes: written to the cache and billed again. */
  clientBreakTokens: number
  /** Breaks the proxy made on purpose (`--elide` batches), and their tokens. */
  proxyBreaks: number
  proxyBreakTokens: number
  promptTokens: number
  completionTokens: number
  cachedTokens: number
  /** cachedTokens / promptTokens, or null before any prompt tokens were reported. */
  cachedRatio: number | null
}

export interface SessionFigures extends Figures {
  readonly session: string
  firstSeen: string
  lastSeen: string
  /** The door, agent, model and first words the session began with (see label.ts). */
  door?: string
  agent?: string
  model?: string
  title?: string
  /** The session's latest breaks of the prompt cache (at most 10), oldest first. */
  breaks: BreakFigure[]
}

export interface StatsSnapshot {
  readonly since: string
  /** The prices money is counted at (`--price-per-mtok`); null: no money shown. */
  readonly prices: Prices | null
  /** `--observe`: nothing was changed upstream; the figures are what would have been saved. */
  readonly observe: boolean
  readonly totals: Figures
  /** `totals.unrecognised` by tool name. */
  readonly unrecognisedByTool: Record<string, number>
  /** The latest requests that rendered new results (at most 20, newest first): the results. */
  readonly recent: readonly RecentRequest[]
  /** Most recently active first; at most `maxSessions`. */
  readonly sessions: SessionFigures[]
  /** The totals over time: one point per 10 s with requests (the last hour), oldest first. */
  readonly series: readonly SeriesPoint[]
}

/** The totals at the end of a 10-second window: the dashboard's chart. */
export interface SeriesPoint {
  readonly at: string
  readonly requests: number
  readonly cachedRatio: number | null
  readonly inputTokensSaved: number
  readonly clientBreaks: number
}

/** One point per window of this many milliseconds, and this many points. */
const SERIES_WINDOW_MS = 10_000
const SERIES_POINTS = 360

/** Where a serving process sends its figures, and reads /stats and /metrics from. */
export interface StatsSink {
  recordRequest(request: FinishedRequest): void
  /** A store call's duration, by operation (get, putIfAbsent, ...). */
  recordStore(operation: string, ms: number, ok: boolean): void
  /** /stats' figures (with `--workers`, the primary's, over every worker). */
  read(): Promise<StatsSnapshot>
  /** Prometheus text exposition format. */
  metrics(): Promise<string>
  /**
   * Reports a bounded in-process cache's size in /metrics (`lembas_cache_entries{cache}`, and
   * `lembas_cache_bytes{cache}` where it is weighed).
   */
  watchCache(name: string, size: () => CacheSize): void
  /** Reports `--cold-bodies-mb`'s use in /metrics: bytes let in, requests waiting. */
  watchColdBodies(use: () => ColdBodies): void
}

/** What `--cold-bodies-mb` holds now: bodies let in (their declared bytes), requests waiting. */
export interface ColdBodies {
  readonly bytes: number
  readonly waiting: number
}

/** Before the admission reports: no body let in, none waiting. */
export const NO_COLD_BODIES: ColdBodies = { bytes: 0, waiting: 0 }

export interface StatsCollector extends StatsSink {
  snapshot(): StatsSnapshot
  /** Counts another process's event-loop hold too (`--workers`: each worker's). */
  watchLoop(seconds: () => number): void
  /** The figures worth keeping over a restart, and how many requests they have seen. */
  saved(): SavedStats
  /** Goes on from figures saved by an earlier process (before any request is recorded). */
  restore(saved: SavedStats): void
}

/** What `--stats store` keeps in the store: /stats' figures, not the recent list or metrics. */
export interface SavedStats {
  readonly since: string
  readonly totals: Figures
  readonly sessions: readonly SessionFigures[]
  readonly unrecognisedByTool: Record<string, number>
}

/** Characters per token for the saved-tokens estimate. */
export const CHARS_PER_TOKEN = 4

/** An in-process collector; sessions beyond `maxSessions` are dropped, least recent first. */
export function createStats(
  options: { maxSessions?: number; observe?: boolean; prices?: Prices | undefined } = {},
): StatsCollector {
  const prices = options.prices ?? null
  const maxSessions = options.maxSessions ?? 500
  let since = new Date().toISOString()
  const totals = emptyFigures()
  // Each session weighs 1: at most maxSessions of them.
  const sessions = new Lru<SessionFigures>()
  const unrecognisedByTool = new Map<string, number>()
  // The sessions /stats lists are one of the bounded caches /metrics shows.
  const caches = new Map<string, () => CacheSize>([
    ['stats_sessions', () => ({ entries: sessions.size })],
  ])
  const loops: (() => number)[] = []
  let coldBodies: (() => ColdBodies) | undefined
  const recent: RecentRequest[] = []
  const series: SeriesPoint[] = []
  let windowStart = 0
  const registry = new Registry()
  const m = metricsOf(registry)
  // The longest the event loop was held between two scrapes: one request must not stall others.
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()

  return {
    recordRequest(request) {
      const usage = upstreamUsage(request.usage, request.timings)
      add(totals, request, usage, prices)
      if (request.session !== undefined) {
        const now = new Date().toISOString()
        const figures = sessions.get(request.session) ?? {
          session: request.session,
          firstSeen: now,
          lastSeen: now,
          door: request.door,
          ...emptyFigures(),
          breaks: [],
        }
        // Named by its first request that says: the first words it began with.
        if (figures.title === undefined && request.label) Object.assign(figures, request.label)
        figures.lastSeen = now
        add(figures, request, usage, prices)
        const broken = request.rebuild?.cacheBreak
        if (broken) {
          figures.breaks = [...figures.breaks, { at: now, ...broken }].slice(-SESSION_BREAKS)
        }
        sessions.set(request.session, figures, 1)
        sessions.evictTo(maxSessions)
      }
      const labels = { stream: String(request.stream), status: String(request.status) }
      m.requests.inc({ ...labels, door: request.door })
      m.duration.observe({ stream: labels.stream }, request.ms / 1000)
      if (request.upstreamError) m.upstreamErrors.inc()
      const rebuild = request.rebuild
      if (rebuild) {
        m.newResults.inc(rebuild.newResults)
        m.stubs.inc(rebuild.stubs)
        m.dedupes.inc(rebuild.dedupes)
        m.caps.inc(rebuild.caps)
        m.charsSaved.inc(rebuild.charsSaved)
        m.tokensSaved.inc(rebuild.charsSaved / CHARS_PER_TOKEN)
        if (rebuild.spliced) m.spliced.inc()
        if (rebuild.newSummaries) m.compactions.inc(rebuild.newSummaries)
        if (rebuild.results?.length) {
          recent.unshift({
            at: new Date().toISOString(),
            session: request.session,
            door: request.door,
            results: rebuild.results,
          })
          recent.length = Math.min(recent.length, RECENT_REQUESTS)
        }
        if (rebuild.cacheBreak) {
          m.breaks.inc({ by: rebuild.cacheBreak.by })
          m.breakTokens.inc({ by: rebuild.cacheBreak.by }, rebuild.cacheBreak.tokens)
        }
        for (const { tool } of rebuild.unrecognised ?? []) {
          m.unrecognised.inc({ tool })
          unrecognisedByTool.set(tool, (unrecognisedByTool.get(tool) ?? 0) + 1)
        }
      }
      // A new point when the window of the last one has passed; else the last one goes on.
      const nowMs = Date.now()
      const inWindow = series.length > 0 && nowMs - windowStart < SERIES_WINDOW_MS
      if (!inWindow) windowStart = nowMs
      const point = {
        at: inWindow ? series.at(-1)!.at : new Date(nowMs).toISOString(),
        requests: totals.requests,
        cachedRatio: totals.cachedRatio,
        inputTokensSaved: totals.inputTokensSaved,
        clientBreaks: totals.clientBreaks,
      }
      if (inWindow) series[series.length - 1] = point
      else series.push(point)
      if (series.length > SERIES_POINTS) series.shift()
      m.recalls.inc(request.recalls)
      m.promptTokens.inc(usage.promptTokens)
      m.completionTokens.inc(usage.completionTokens)
      m.cachedTokens.inc(usage.cachedTokens)
      if (totals.cachedRatio !== null) m.cachedRatio.set(totals.cachedRatio)
      m.sessions.set(sessions.size)
    },
    recordStore(operation, ms, ok) {
      m.store.observe({ operation, ok: String(ok) }, ms / 1000)
    },
    read() {
      return Promise.resolve(this.snapshot())
    },
    watchLoop(seconds) {
      loops.push(seconds)
    },
    snapshot() {
      return {
        since,
        observe: options.observe ?? false,
        prices,
        totals: { ...totals },
        unrecognisedByTool: Object.fromEntries(unrecognisedByTool),
        recent: [...recent],
        sessions: [...sessions.values()].reverse().map((figures) => ({ ...figures })),
        series: [...series],
      }
    },
    saved() {
      return {
        since,
        totals: { ...totals },
        sessions: [...sessions.values()].map((figures) => ({ ...figures })),
        unrecognisedByTool: Object.fromEntries(unrecognisedByTool),
      }
    },
    restore(saved) {
      since = saved.since
      Object.assign(totals, emptyFigures(), saved.totals)
      sessions.clear()
      for (const figures of saved.sessions.slice(-maxSessions))
        // Figures saved by an older version may lack the newer fields.
        sessions.set(
          figures.session,
          {
            ...emptyFigures(),
            ...figures,
            breaks: (figures.breaks as BreakFigure[] | undefined) ?? [],
          },
          1,
        )
      unrecognisedByTool.clear()
      for (const [tool, n] of Object.entries(saved.unrecognisedByTool ?? {}))
        unrecognisedByTool.set(tool, n)
    },
    watchCache(name, size) {
      caches.set(name, size)
    },
    watchColdBodies(use) {
      coldBodies = use
    },
    metrics() {
      for (const [cache, size] of caches) {
        const { entries, bytes } = size()
        m.cacheEntries.set({ cache }, entries)
        if (bytes !== undefined) m.cacheBytes.set({ cache }, bytes)
      }
      const cold = coldBodies?.() ?? NO_COLD_BODIES
      m.coldBodyBytes.set(cold.bytes)
      m.coldBodiesWaiting.set(cold.waiting)
      m.loopBlock.set(Math.max(delay.max / 1e9, ...loops.map((seconds) => seconds())))
      delay.reset()
      return registry.metrics()
    },
  }
}

function emptyFigures(): Figures {
  return {
    requests: 0,
    upstreamErrors: 0,
    newResults: 0,
    stubs: 0,
    dedupes: 0,
    caps: 0,
    charsSaved: 0,
    tokensSavedEstimate: 0,
    inputTokensSaved: 0,
    moneySaved: null,
    recalls: 0,
    unrecognised: 0,
    compactions: 0,
    clientBreaks: 0,
    clientBreakTokens: 0,
    proxyBreaks: 0,
    proxyBreakTokens: 0,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    cachedRatio: null,
  }
}

function add(
  figures: Figures,
  request: FinishedRequest,
  usage: UpstreamUsage,
  prices: Prices | null,
): void {
  figures.requests++
  if (request.upstreamError) figures.upstreamErrors++
  const rebuild = request.rebuild
  if (rebuild) {
    figures.newResults += rebuild.newResults
    figures.stubs += rebuild.stubs
    figures.dedupes += rebuild.dedupes
    figures.caps += rebuild.caps
    figures.charsSaved += rebuild.charsSaved
    figures.tokensSavedEstimate = Math.round(figures.charsSaved / CHARS_PER_TOKEN)
    const saved = savedOn(rebuild, prices)
    figures.inputTokensSaved += saved.tokens
    if (saved.money !== null) figures.moneySaved = round6((figures.moneySaved ?? 0) + saved.money)
    figures.unrecognised += rebuild.unrecognised?.length ?? 0
    figures.compactions += rebuild.newSummaries ?? 0
    const broken = rebuild.cacheBreak
    if (broken?.by === 'client') {
      figures.clientBreaks++
      figures.clientBreakTokens += broken.tokens
    } else if (broken?.by === 'proxy') {
      figures.proxyBreaks++
      figures.proxyBreakTokens += broken.tokens
    }
  }
  figures.recalls += request.recalls
  figures.promptTokens += usage.promptTokens
  figures.completionTokens += usage.completionTokens
  figures.cachedTokens += usage.cachedTokens
  figures.cachedRatio =
    figures.promptTokens > 0 ? round(figures.cachedTokens / figures.promptTokens) : null
}

/**
 * What one request did not send, in tokens and money. The results new in it are priced as
 * uncached input written to the cache; the rest of what it carries as cached input (the
 * previous request's prefix), which is where a result saves again on every later request.
 */
export function savedOn(
  rebuild: RebuildCounts,
  prices: Prices | null,
): { tokens: number; money: number | null } {
  if (rebuild.carriedChars === undefined) return { tokens: 0, money: null }
  const tokens = Math.round((rebuild.carriedChars - (rebuild.overheadChars ?? 0)) / CHARS_PER_TOKEN)
  if (!prices) return { tokens, money: null }
  const fresh = rebuild.charsSaved / CHARS_PER_TOKEN
  const perToken = prices.perMTok / 1_000_000
  const money =
    fresh * perToken * (1 + prices.writePremium) +
    (tokens - fresh) * perToken * (1 - prices.cachedDiscount)
  return { tokens, money }
}

function round6(value: number): number {
  return Math.round(value * 1e6) / 1e6
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000
}

function metricsOf(registry: Registry) {
  const registers = [registry]
  const counter = (name: string, help: string, labelNames: string[] = []) =>
    new Counter({ name, help, labelNames, registers })
  return {
    requests: counter('lembas_requests_total', 'Requests finished, by front door.', [
      'door',
      'stream',
      'status',
    ]),
    duration: new Histogram({
      name: 'lembas_request_duration_seconds',
      help: 'Request time, to the end of the answer (streams included).',
      labelNames: ['stream'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    }),
    upstreamErrors: counter(
      'lembas_upstream_errors_total',
      'Requests the upstream failed: an error status, unreachable, a timeout, a broken stream.',
    ),
    newResults: counter('lembas_new_results_total', 'Tool results rendered for the first time.'),
    stubs: counter('lembas_stubs_total', 'Tool results shown as a stub of an earlier one.'),
    dedupes: counter('lembas_dedupes_total', 'New tool results rendered as a stub (deduplicated).'),
    caps: counter('lembas_caps_total', 'New tool results cut to the cap.'),
    charsSaved: counter(
      'lembas_chars_saved_total',
      'Characters of tool output not sent upstream (tool text minus rendering, new results).',
    ),
    tokensSaved: counter(
      'lembas_tokens_saved_total',
      'Estimated tokens not sent upstream: lembas_chars_saved_total / 4.',
    ),
    spliced: counter('lembas_spliced_total', 'Requests handled on the fast path.'),
    compactions: counter(
      'lembas_compactions_total',
      "The agents' compactions found: summaries seen for the first time, each followed by the table of files read before it.",
    ),
    unrecognised: counter(
      'lembas_unrecognised_results_total',
      "Results of a known agent tool not answered as its profile expects (the agent's output changed), by tool.",
      ['tool'],
    ),
    recalls: counter('lembas_recalls_total', 'Recall calls answered by the proxy.'),
    breaks: counter(
      'lembas_cache_breaks_total',
      "Requests that stopped repeating their session's previous one upstream, by who changed it (client, or proxy: --elide).",
      ['by'],
    ),
    breakTokens: counter(
      'lembas_cache_break_tokens_total',
      "The previous requests' tokens after a break (characters / 4): billed again, by who changed it.",
      ['by'],
    ),
    promptTokens: counter(
      'lembas_upstream_prompt_tokens_total',
      'Prompt tokens the upstream reported.',
    ),
    completionTokens: counter(
      'lembas_upstream_completion_tokens_total',
      'Completion tokens the upstream reported.',
    ),
    cachedTokens: counter(
      'lembas_upstream_cached_tokens_total',
      'Prompt tokens the upstream reported as served from its cache.',
    ),
    cachedRatio: new Gauge({
      name: 'lembas_cached_token_ratio',
      help: 'Cached prompt tokens / prompt tokens, over all requests since start.',
      registers,
    }),
    cacheBytes: new Gauge({
      name: 'lembas_cache_bytes',
      help: 'Bytes held by a bounded in-process cache (splice: recent histories; store: stored values; the memos: estimated).',
      labelNames: ['cache'],
      registers,
    }),
    cacheEntries: new Gauge({
      name: 'lembas_cache_entries',
      help: 'Entries in a bounded in-process cache (least recently used dropped first).',
      labelNames: ['cache'],
      registers,
    }),
    coldBodyBytes: new Gauge({
      name: 'lembas_cold_body_bytes',
      help: 'Bytes of bodies being read or parsed whole, within --cold-bodies-mb (declared sizes).',
      registers,
    }),
    coldBodiesWaiting: new Gauge({
      name: 'lembas_cold_bodies_waiting',
      help: 'Requests waiting, unread, for room in --cold-bodies-mb.',
      registers,
    }),
    loopBlock: new Gauge({
      name: 'lembas_event_loop_block_max_seconds',
      help: 'The longest the event loop was held (delay past 10 ms checks) since the previous scrape.',
      registers,
    }),
    sessions: new Gauge({
      name: 'lembas_sessions',
      help: 'Sessions tracked by /stats.',
      registers,
    }),
    store: new Histogram({
      name: 'lembas_store_duration_seconds',
      help: 'Store call time, by operation; lock_wait: a SQLite write waiting for another process to release the file.',
      labelNames: ['operation', 'ok'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    }),
  }
}

/** Filled in by the pipeline while it answers one request: what the upstream reported. */
export interface Meter {
  /** `usage`, summed over recall rounds. */
  usage?: unknown
  /** llama.cpp's `timings`, summed over recall rounds. */
  timings?: unknown
  recalls: number
  /** A stream that failed after it started. */
  failed?: boolean
}
