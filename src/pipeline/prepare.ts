import { LembasError } from '../errors.js'
import { signalledSummary, summaryIndices } from '../session/compaction.js'
import {
  explicitScope,
  identify,
  shortHash,
  tenantOf,
  type SessionSources,
} from '../session/identity.js'
import type { Profile } from '../tools/index.js'
import { checkChatRequest, contentText, type ChatMessage, type ChatRequest } from '../wire/chat.js'
import { arrayTail, messagesSpan } from '../wire/json-scan.js'
import {
  findSession,
  rebuildHistory,
  SessionRef,
  type Continuity,
  type HistoryDeps,
  type HistoryStats,
  type Rebuilt,
} from './history.js'
import type { SpliceCache } from './splice.js'
import type { RecallSetup } from './recall.js'
import { appendMessages, buildBody, messagesText, type UpstreamBody } from './upstream-body.js'

export interface PrepareDeps extends HistoryDeps {
  readonly sessionSources: SessionSources
  readonly continueWithinMs: number
  readonly splice: SpliceCache
  readonly recall: RecallSetup
  readonly now?: (() => number) | undefined
  /** Nesting deeper than this is refused: JSON.stringify fails near 10,000 levels. */
  readonly maxDepth: number
}

export type Prepared =
  /** No tools: nothing to shape, nothing to add; the client's bytes go as they are. */
  | { readonly kind: 'plain'; readonly request: ChatRequest }
  | {
      readonly kind: 'rebuilt'
      /** The request's fields (its messages are what `body` carries). */
      readonly request: ChatRequest
      readonly body: UpstreamBody
      readonly session: SessionRef
      /** The key of the request's last message (see Turn.lastMessage). */
      readonly lastMessage: string | undefined
      readonly stats: HistoryStats & { readonly spliced: number }
      /** False when the client defines its own `recall`: nothing is intercepted then. */
      readonly recall: boolean
    }

/**
 * Parses a chat request and rebuilds what the upstream sees. A request that begins with the
 * session's previous request (byte for byte) is handled from where that one ended: only the
 * messages it appends are parsed, hashed and rendered; the rest is the upstream text sent before.
 */
export async function prepareChat(
  bytes: Buffer,
  headers: Headers,
  compactionSignal: string | undefined,
  deps: PrepareDeps,
): Promise<Prepared> {
  const now = (deps.now ?? Date.now)()
  const fast = await spliced(bytes, headers, compactionSignal, deps, now)
  if (fast) return fast
  // A whole parse of a long history takes several times its size in memory: a few at a time
  // keep many sessions starting at once (a restart, a cold replica) from exhausting memory.
  const release = await fullParses.acquire()
  try {
    return await prepareWhole(bytes, headers, compactionSignal, deps, now)
  } finally {
    release()
  }
}

/** A small counting semaphore. */
class Slots {
  #free: number
  readonly #waiting: (() => void)[] = []

  constructor(count: number) {
    this.#free = count
  }

  async acquire(): Promise<() => void> {
    if (this.#free > 0) this.#free--
    else await new Promise<void>((resolve) => this.#waiting.push(resolve))
    return () => {
      const next = this.#waiting.shift()
      if (next) next()
      else this.#free++
    }
  }
}

const fullParses = new Slots(4)

async function prepareWhole(
  bytes: Buffer,
  headers: Headers,
  compactionSignal: string | undefined,
  deps: PrepareDeps,
  now: number,
): Promise<Prepared> {
  const request = parseWhole(bytes.toString('utf8'), deps.maxDepth)
  const tools = request.tools ?? []
  if (tools.length === 0) return { kind: 'plain', request }
  const identity = identify(headers, request, deps.sessionSources)
  const continuity = continuityOf(request.messages, compactionSignal, deps, now)
  const session = await findSession(request.messages, identity, deps.store, continuity)
  const rebuilt = await rebuildHistory(request.messages, tools, session, deps, continuity)
  const upstreamMessages = appendMessages([], messagesText(rebuilt.messages))
  const span = messagesSpan(bytes)
  if (span && session.scope !== undefined) {
    deps.splice.remember(spliceKey(headers, deps.sessionSources), {
      scope: session.scope,
      explicit: identity.explicit !== undefined,
      systemKey: continuity.systemKey,
      arrayStart: span.arrayStart,
      prefix: bytes.subarray(0, span.lastEnd),
      messages: upstreamMessages,
      history: rebuilt.state,
      endsWithMarker: endsWithMarker(request.messages, deps.profile),
    })
  }
  return finish(request, upstreamMessages, session, rebuilt, 0, deps)
}

/** The fast path; undefined when the request does not go on from a remembered one. */
async function spliced(
  bytes: Buffer,
  headers: Headers,
  compactionSignal: string | undefined,
  deps: PrepareDeps,
  now: number,
): Promise<Prepared | undefined> {
  // A compaction is decided over the whole history: the full path takes those requests.
  if (compactionSignal) return undefined
  const key = spliceKey(headers, deps.sessionSources)
  const state = deps.splice.find(key, bytes)
  if (!state || state.endsWithMarker) return undefined
  const lastEnd = state.prefix.length
  const tail = arrayTail(bytes, lastEnd)
  if (!tail) return undefined
  // Only what the request appends is decoded and parsed; the fields around the array too.
  const between = bytes.toString('utf8', lastEnd, tail.arrayEnd)
  const newText = between.replace(/^\s*,/, '')
  if (newText !== between && newText.trim() === '') return undefined // `[…,]`: the full path refuses it
  const restText =
    bytes.toString('utf8', 0, state.arrayStart) + '[]' + bytes.toString('utf8', tail.arrayEnd + 1)
  // The appended messages sit one level deeper in the whole body than in this array.
  const appended = parseJson('[' + newText + ']', deps.maxDepth - 1)
  const rest = parseJson(restText, deps.maxDepth)
  const checked = checkChatRequest({ ...(rest as object), messages: appended })
  if (!checked.ok)
    throw new LembasError('invalid_request', `not a chat completions request: ${checked.message}`)
  const request = checked.value
  const tools = request.tools ?? []
  const identity = identify(headers, request, deps.sessionSources)
  if (tools.length === 0) return undefined
  // A session id in the body must name the remembered session; a body that drops it is not
  // the remembered explicit session any more.
  const scope = identity.explicit
    ? explicitScope({ ...identity, explicit: identity.explicit })
    : undefined
  if (scope !== undefined ? scope !== state.scope : state.explicit) return undefined
  if (hasMarker(request.messages, deps.profile)) return undefined
  // Tool results that answer calls made before the remembered end must know those calls.
  const known = new Set([
    ...state.history.calls.keys(),
    ...request.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)),
  ])
  if (request.messages.some((m) => m.role === 'tool' && !known.has(m.tool_call_id ?? '')))
    return undefined

  const session = new SessionRef(identity, state.scope)
  const continuity = {
    summaries: [],
    systemKey: state.systemKey,
    withinMs: deps.continueWithinMs,
    now,
  }
  const rebuilt = await rebuildHistory(
    request.messages,
    tools,
    session,
    deps,
    continuity,
    state.history,
  )
  const upstreamMessages = appendMessages(state.messages, messagesText(rebuilt.messages))
  deps.splice.remember(key, {
    ...state,
    prefix: bytes.subarray(0, tail.lastEnd),
    messages: upstreamMessages,
    history: rebuilt.state,
    endsWithMarker: endsWithMarker(request.messages, deps.profile),
  })
  return finish(request, upstreamMessages, session, rebuilt, 1, deps)
}

function finish(
  request: ChatRequest,
  upstreamMessages: readonly Buffer[],
  session: SessionRef,
  rebuilt: Rebuilt,
  spliced: 0 | 1,
  deps: PrepareDeps,
): Prepared {
  const tools = request.tools ?? []
  const clientHasRecall = tools.some((tool) => tool.function?.name === deps.recall.name)
  const fields = { ...request, tools: clientHasRecall ? tools : [...tools, deps.recall.tool] }
  return {
    kind: 'rebuilt',
    request,
    body: buildBody(fields, upstreamMessages),
    session,
    lastMessage: rebuilt.state.lastMessage,
    stats: { ...rebuilt.stats, spliced },
    recall: !clientHasRecall,
  }
}

function continuityOf(
  messages: readonly ChatMessage[],
  compactionSignal: string | undefined,
  deps: PrepareDeps,
  now: number,
): Continuity {
  return {
    summaries: summaryIndices(
      messages,
      deps.profile.compaction,
      signalledSummary(compactionSignal, messages),
    ),
    systemKey: systemKey(messages, deps.profile),
    withinMs: deps.continueWithinMs,
    now,
  }
}

/** A message an agent's compaction marker matches: such requests take the full path. */
function hasMarker(messages: readonly ChatMessage[], profile: Profile): boolean {
  return messages.some((message) => isMarker(message, profile))
}

/** The last message is a marker whose summary may come next (opencode's question). */
function endsWithMarker(messages: readonly ChatMessage[], profile: Profile): boolean {
  const last = messages.at(-1)
  return last !== undefined && isMarker(last, profile)
}

function isMarker(message: ChatMessage, profile: Profile): boolean {
  return profile.compaction.some(
    (marker) => marker.role === message.role && marker.pattern.test(contentText(message.content)),
  )
}

/** The system prompt's fingerprint, cut before a summary an agent put into it (Continue). */
function systemKey(messages: readonly ChatMessage[], profile: Profile): string {
  const system = messages.find((message) => message.role === 'system')
  let text = system ? contentText(system.content) : ''
  for (const marker of profile.compaction) {
    if (marker.role !== 'system') continue
    const at = text.search(marker.pattern)
    if (at >= 0) text = text.slice(0, at)
  }
  return shortHash(text)
}

/**
 * Where a session's last request is remembered: known before the body is read, from the tenant
 * and the session header (sessions named in the body, or implicit ones, share a key per tenant).
 */
function spliceKey(headers: Headers, sources: SessionSources): string {
  const header = sources.headers.map((name) => headers.get(name)?.trim()).find((value) => value)
  return tenantOf(headers) + '\u0000' + (header ?? '')
}

function parseWhole(text: string, maxDepth: number): ChatRequest {
  const json = parseJson(text, maxDepth)
  const checked = checkChatRequest(json)
  if (!checked.ok)
    throw new LembasError('invalid_request', `not a chat completions request: ${checked.message}`)
  return checked.value
}

function parseJson(text: string, maxDepth: number): unknown {
  if (nestingDepth(text) > maxDepth) {
    throw new LembasError('invalid_request', `the request nests deeper than ${maxDepth} levels`)
  }
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new LembasError(
      'invalid_request',
      `the body is not valid JSON: ${withoutExcerpt((error as Error).message)}`,
    )
  }
}

/**
 * V8 quotes up to 20 characters of the input in some parse errors (`Unexpected token 'C',
 * ..."api_key":CANARY-a"... is not valid JSON`). The message is logged, and those characters can
 * be a key or a prompt: they are cut. The offending character itself stays.
 */
function withoutExcerpt(message: string): string {
  return message.replace(/, (?:\.\.\.)?"[\s\S]*"(?:\.\.\.)? is not valid JSON$/, '')
}

/** Bracket depth outside strings; one pass over the text, no parse. */
export function nestingDepth(text: string): number {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === 92) i++
      else if (code === 34) inString = false
    } else if (code === 34) inString = true
    else if (code === 123 || code === 91) max = Math.max(max, ++depth)
    else if (code === 125 || code === 93) depth--
  }
  return max
}
