import { hash } from 'node:crypto'
import type { Door, Json } from './door.js'
import { LembasError } from '../errors.js'
import type { Memo } from '../memo.js'
import type { AnswerPlace } from '../session/answers.js'
import type { SessionRef } from '../session/find.js'
import {
  explicitScope,
  firstHeader,
  identify,
  tenantOf,
  type Identity,
  type SessionSources,
} from '../session/identity.js'
import { arraySpan, arrayTail } from '../wire/json-scan.js'
import { pacer } from '../pace/index.js'
import { framing, piecesBytes, type UpstreamBody } from './body.js'
import { cacheBreak, fieldBreak, fixedDigests, itemBreak, type CacheBreak } from './breaks.js'
import { parseBody, parseElements, parseJson, skipComma, SLICED_PARSE_BYTES } from './json.js'
import { KeptBuilder, resolveKept } from './kept.js'
import type { HistoryStats } from './rebuild.js'
import { isMarker, shapeItems, type ShapeDeps, type Shaped } from './shape.js'
import {
  closestState,
  prefixHash,
  type ItemDigests,
  type PrefixWatch,
  type SpliceCache,
  type SpliceState,
} from './splice.js'
import type { RecallSetup } from './recall.js'
import type { StateRestore } from './state-saves.js'
import type { RunningDigest } from './prefix-digest.js'

export interface PrepareDeps extends ShapeDeps {
  readonly sessionSources: SessionSources
  readonly continueWithinMs: number
  readonly splice: SpliceCache
  readonly recall: RecallSetup
  readonly now?: (() => number) | undefined
  /** Nesting deeper than this is refused: JSON.stringify fails near 10,000 levels. */
  readonly maxDepth: number
  /** `--save-states-s`: states another process saved, for a key this one holds none of. */
  readonly saves?: StateRestore | undefined
}

export type Prepared =
  /** No tools and no tool results: nothing to shape; the client's bytes go as they are. */
  | { readonly kind: 'plain'; readonly request: Json }
  | {
      readonly kind: 'rebuilt'
      /** The request's fields (its items are what `body` carries). */
      readonly request: Json
      readonly body: UpstreamBody
      readonly session: SessionRef
      readonly place: AnswerPlace
      /** Client items in the request. */
      readonly items: number
      readonly stats: HistoryStats & {
        readonly spliced: number
        /** What the proxy adds to every request: the prompt block and the recall tool. */
        readonly overheadChars: number
      }
      /**
       * Who answers `recall`: the proxy (its tool added); the client, which defines its own
       * (nothing intercepted); or none, in a request that offers no tools at all (an agent's
       * summarisation request: its history shaped like the others, no tool added to it).
       */
      readonly recall: 'proxy' | 'client' | 'none'
    }

export interface PrepareInput {
  readonly door: Door
  readonly bytes: Buffer
  readonly headers: Headers
  readonly compactionSignal?: string | undefined
  /** Digests of the body's remembered prefixes, taken while it arrived. */
  readonly prefixes?: PrefixWatch | undefined
}

/**
 * Parses a request and rebuilds what the upstream sees. A request that begins with the
 * session's previous request (byte for byte) is handled from where that one ended: only the
 * items it appends are parsed, hashed and rendered; the rest is the upstream text sent before.
 */
export async function prepare(input: PrepareInput, deps: PrepareDeps): Promise<Prepared> {
  const now = (deps.now ?? Date.now)()
  const given = { newResults: 0 }
  const fast = await spliced(input, deps, now, given)
  if (fast) return fast
  // A whole parse of a long history takes several times its size in memory: a few at a time
  // keep many sessions starting at once (a restart, a cold replica) from exhausting memory.
  const release = await fullParses.acquire()
  let whole: Prepared
  try {
    whole = await prepareWhole(input, deps, now)
  } finally {
    release()
  }
  if (whole.kind !== 'rebuilt' || given.newResults === 0) return whole
  const newResults = whole.stats.newResults + given.newResults
  return { ...whole, stats: { ...whole.stats, newResults } }
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
  input: PrepareInput,
  deps: PrepareDeps,
  now: number,
): Promise<Prepared> {
  const { door, bytes, headers } = input
  const parsed = await parseBody(bytes, door.arrayKey, deps.maxDepth)
  const request = checked(door, parsed.value)
  const array = request[door.arrayKey]
  const view = Array.isArray(array) ? door.toView(array as Json[]) : undefined
  // One that offers no tools goes as it came, unless it carries tool results: an agent's
  // summarisation request (Codex's `tools: []`, Qwen Code's fallback), whose history goes as the
  // others' did (ids, stubs, caps), or it would carry every result whole.
  if (!view || (!door.shaped(request) && !view.messages.some((m) => m.role === 'tool')))
    return { kind: 'plain', request }
  const items = array as Json[]
  const identity = identify(
    headers,
    door.identityFields(request),
    deps.sessionSources,
    deps.memos.tenants,
  )
  const key = spliceKey(door, headers, deps.sessionSources, deps.memos.tenants)
  // What this process last sent for these sessions: to tell where this request stops repeating it.
  const earlier = deps.splice.states(key)
  const fixed = fixedDigests(request)
  const shaped = await shapeItems(
    {
      door,
      request,
      items,
      view,
      identity,
      compactionSignal: input.compactionSignal,
      now,
      withinMs: deps.continueWithinMs,
    },
    deps,
  )
  if (!shaped) throw new Error('the full path always shapes')
  const scope = shaped.session.scope
  const mine = earlier.some((state) => state.scope === scope)
  // Every element's end: to digest and keep each item (a large body's span came with its parse).
  const span =
    shaped.remember || mine
      ? (parsed.span ?? (await arraySpan(bytes, door.arrayKey, Number.MAX_SAFE_INTEGER)))
      : undefined
  const elements = span && elementsOf(bytes, span.arrayStart + 1, span.ends)
  const digests = elements && (await itemDigests(bytes, elements, shaped.upstream, items.length))
  const previous =
    scope !== undefined && digests ? closestState(earlier, scope, digests.client, fixed) : undefined
  const sentBytes = piecesBytes(shaped.items)
  const broken =
    previous && digests
      ? (cacheBreak({
          previous,
          fixed,
          items,
          digests,
          sentBytes,
          offsets: shaped.offsets,
          batchEnd: shaped.batchAt?.end,
        }) ?? batchBreak(shaped, previous.sentBytes, sentBytes))
      : undefined
  const rest = span && restOf(door, bytes, span.arrayEnd, request)
  if (span && elements && digests && rest && shaped.remember) {
    const { covered, ...state } = shaped.remember
    const end = endOf(span.ends, items.length - covered, items.length, span.arrayStart + 1)
    if (end !== undefined)
      deps.splice.remember(key, {
        ...state,
        ...(await keptState(bytes, elements, shaped.upstream, covered, undefined, digests)),
        fixed,
        rest,
        explicit: identity.explicit !== undefined,
        ...forkName(identity, shaped.session.scope),
        arrayStart: span.arrayStart,
        prefix: prefixOf(bytes, end, prefixHash(bytes.subarray(0, end))),
      })
  }
  return finish(door, request, items.length, shaped, 0, deps, broken, rest?.value)
}

/** A fork's state remembers the scope its own session id names, which it goes on under another. */
function forkName(identity: Identity, scope: string | undefined): { named?: string } {
  if (identity.explicit === undefined) return {}
  const named = explicitScope({ ...identity, explicit: identity.explicit })
  return named === scope ? {} : { named }
}

/**
 * Where the remembered prefix ends: after the element `back` places before the last of `count`
 * (0: the last), or at `none` (just inside the array) when it covers none of them.
 */
function endOf(ends: readonly number[], back: number, count: number, none: number) {
  return back >= count ? none : ends[ends.length - 1 - back]
}

/** The fast path; undefined when the request does not go on from a remembered one. */
async function spliced(
  input: PrepareInput,
  deps: PrepareDeps,
  now: number,
  given: { newResults: number },
): Promise<Prepared | undefined> {
  const { door, bytes, headers } = input
  // A compaction is decided over the whole history: the full path takes those requests.
  if (input.compactionSignal) return undefined
  const key = spliceKey(door, headers, deps.sessionSources, deps.memos.tenants)
  let found = deps.splice.find(key, bytes, input.prefixes)
  // A session this process has not served (a crash, another replica): from its last save.
  if (!found && (await deps.saves?.restore(key))) found = deps.splice.find(key, bytes)
  if (!found || found.state.summaryAhead) return undefined
  const state = found.state
  const lastEnd = state.prefix.length
  // Every appended element's end: to parse many one by one, and to remember where to go on.
  const tail = await arrayTail(bytes, lastEnd, Number.MAX_SAFE_INTEGER)
  if (!tail) return undefined
  // Only what the request appends is decoded and parsed; the fields around the array too.
  const appended = await appendedItems(bytes, lastEnd, tail, deps.maxDepth)
  if (!appended) return undefined
  // The fields before the array are in the prefix, checked already; those after it, most often
  // sent again unchanged, are compared as bytes, and decoded and parsed only when they changed.
  const same = state.rest?.tail.equals(bytes.subarray(tail.arrayEnd + 1)) === true
  const fields = same
    ? state.rest!.value
    : parseJson(fieldsText(bytes, state.arrayStart, tail.arrayEnd), deps.maxDepth)
  const request = checked(door, { ...(fields as object), [door.arrayKey]: appended })
  if (!door.shaped(request)) return undefined
  const rest = same ? state.rest! : restOf(door, bytes, tail.arrayEnd, request)
  const items = request[door.arrayKey] as Json[]
  const identity = identify(
    headers,
    door.identityFields(request),
    deps.sessionSources,
    deps.memos.tenants,
  )
  // A session id in the body must name the remembered session; a body that drops it is not
  // the remembered explicit session any more.
  const scope = identity.explicit
    ? explicitScope({ ...identity, explicit: identity.explicit })
    : undefined
  if (scope !== undefined ? scope !== (state.named ?? state.scope) : state.explicit)
    return undefined
  // A state that holds no item is bytes before the array alone: with other tools or another
  // system, the request is another conversation's (a subagent's first) as often as a change,
  // and the full path tells them apart (before anything is rendered or written).
  const fixed = same ? state.fixed : fixedDigests(request)
  if (state.itemCount === 0 && fieldBreak(state, fixed)) return undefined
  const view = door.toView(items)
  if (view.messages.some((message) => isMarker(message, deps.profile))) return undefined
  // Tool results that answer calls made before the remembered end must know those calls.
  const known = new Set([
    ...state.history.calls.keys(),
    ...view.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)),
  ])
  if (view.messages.some((m) => m.role === 'tool' && !known.has(m.tool_call_id ?? '')))
    return undefined

  const shaped = await shapeItems(
    {
      door,
      request,
      items,
      view,
      identity,
      start: state,
      known: resolveKept(state.kept.pieces, bytes),
      now,
      withinMs: deps.continueWithinMs,
      given,
    },
    deps,
  )
  if (!shaped) return undefined // a batch of elided results is due: the full path decides it
  if (shaped.remember) {
    const { covered, ...next } = shaped.remember
    const end = endOf(tail.ends, items.length - covered, items.length, lastEnd)
    if (end !== undefined) {
      const elements = elementsOf(bytes, lastEnd, tail.ends.slice(0, covered))
      deps.splice.remember(key, {
        ...state,
        ...next,
        ...(await keptState(bytes, elements, shaped.upstream, covered, state)),
        fixed,
        rest,
        prefix: prefixOf(bytes, end, found.hash.update(bytes.subarray(lastEnd, end))),
      })
    }
  }
  const count = state.itemCount + items.length
  const broken =
    fieldBreak(state, fixed) ?? batchBreak(shaped, state.sentBytes, piecesBytes(shaped.items))
  return finish(door, request, count, shaped, 1, deps, broken, rest.value)
}

/**
 * The break an `--elide` batch made (where no earlier one shows): from its first result on, the
 * previous request's bytes are billed again. The fast path, and the full path after a request
 * whose held-back items the batch reaches, know it only so.
 */
function batchBreak(
  shaped: Shaped,
  previousBytes: number,
  sentBytes: number,
): CacheBreak | undefined {
  const at = shaped.batchAt
  // The elided text is gone, not sent again, and the newest turn is sent uncached either way.
  const resent = Math.min(sentBytes, at?.end ?? sentBytes)
  return at && itemBreak({ ...at, by: 'proxy', previousBytes, sentBytes: resent })
}

function finish(
  door: Door,
  request: Json,
  items: number,
  shaped: Shaped,
  spliced: 0 | 1,
  deps: PrepareDeps,
  broken: CacheBreak | undefined,
  rest?: object,
): Prepared {
  const around = (rest && framings.get(rest)) ?? frame(door, request, deps)
  if (rest) framings.set(rest, around)
  return {
    kind: 'rebuilt',
    request,
    body: { ...around.body, items: shaped.items },
    session: shaped.session,
    place: shaped.place,
    items,
    stats: {
      ...shaped.stats,
      spliced,
      overheadChars: overheadChars(deps, around.recall !== 'proxy'),
      ...(broken ? { cacheBreak: broken } : {}),
    },
    recall: around.recall,
  }
}

/** The upstream bytes around the items: the request's fields with the prompt block and recall. */
function frame(door: Door, request: Json, deps: PrepareDeps) {
  const recall = !door.shaped(request)
    ? 'none'
    : door.definesTool(request, deps.recall.name)
      ? 'client'
      : 'proxy'
  const fields = door.withRecall(
    request,
    deps.promptBlock,
    recall === 'proxy' ? deps.recall.tool : undefined,
  )
  return { recall, body: framing(fields, door.arrayKey) } as const
}

/**
 * The framing built for the fields the fast path remembers (by their parsed object): while a
 * client sends the same tools and system prompt, they are not serialized again.
 */
const framings = new WeakMap<object, ReturnType<typeof frame>>()

/** Each element's bytes [start, end): `from` is just inside the `[` or after a known element. */
function elementsOf(bytes: Buffer, from: number, ends: readonly number[]) {
  let at = from
  return ends.map((end) => {
    const element = { start: skipComma(bytes, at), end }
    at = end
    return element
  })
}

type Element = { readonly start: number; readonly end: number }

const EMPTY = Buffer.alloc(0)

/** Digests of the first `count` items' client bytes and upstream bytes (for cache breaks). */
async function itemDigests(
  bytes: Buffer,
  elements: readonly Element[],
  upstream: readonly Buffer[],
  count: number,
): Promise<ItemDigests> {
  const client: string[] = []
  const sent: string[] = []
  const pace = pacer()
  for (let k = 0; k < count; k++) {
    await pace()
    const element = elements[k]!
    client.push(hash('sha1', bytes.subarray(element.start, element.end), 'base64url'))
    sent.push(hash('sha1', upstream[k] ?? '', 'base64url'))
  }
  return { client, upstream: sent }
}

/**
 * What the fast path keeps of a request's first `count` items, going on from `from` (the state
 * the request went on from; none on the full path): their upstream bytes kept against their
 * client bytes, and their digests (`digests` when they were taken already).
 */
async function keptState(
  bytes: Buffer,
  elements: readonly Element[],
  upstream: readonly Buffer[],
  count: number,
  from: Pick<SpliceState, 'kept' | 'digests'> | undefined,
  digests?: ItemDigests,
): Promise<Pick<SpliceState, 'kept' | 'digests'>> {
  const added = digests ?? (await itemDigests(bytes, elements, upstream, count))
  const builder = new KeptBuilder(bytes, from?.kept)
  const pace = pacer()
  for (let k = 0; k < count; k++) {
    await pace()
    builder.item(upstream[k] ?? EMPTY, elements[k]!.start, elements[k]!.end)
  }
  return {
    kept: builder.result(),
    digests: {
      client: [...(from?.digests.client ?? []), ...added.client.slice(0, count)],
      upstream: [...(from?.digests.upstream ?? []), ...added.upstream.slice(0, count)],
    },
  }
}

function prefixOf(bytes: Buffer, end: number, digest: RunningDigest) {
  return { length: end, digest: digest.digest(), opens: bytes[end - 1] === 91 /* [ */ }
}

/**
 * The fields around the array, as the fast path remembers them: its next request, which most
 * often sends them again, neither parses nor digests them. The history itself is not kept.
 */
function restOf(door: Door, bytes: Buffer, arrayEnd: number, request: Json) {
  const value: Json = { ...request, [door.arrayKey]: [] }
  return { tail: Buffer.from(bytes.subarray(arrayEnd + 1)), value }
}

/** The body's text with its items array emptied: the fields around it, as the client wrote them. */
function fieldsText(bytes: Buffer, arrayStart: number, arrayEnd: number): string {
  return bytes.toString('utf8', 0, arrayStart) + '[]' + bytes.toString('utf8', arrayEnd + 1)
}

/** The prompt block and the recall tool (unless the client has its own), in characters. */
function overheadChars(deps: PrepareDeps, noRecallTool: boolean): number {
  let chars = overheads.get(deps.recall)
  if (chars === undefined) {
    chars = JSON.stringify(deps.recall.tool).length
    overheads.set(deps.recall, chars)
  }
  return deps.promptBlock.length + (noRecallTool ? 0 : chars)
}

const overheads = new WeakMap<object, number>()

/**
 * The items a request appends after the remembered prefix, parsed (they sit one level deeper
 * in the whole body than in this array); undefined for `[…,]`, which the full path refuses.
 * Many bytes of them are decoded and parsed one by one, with pauses (see SLICED_PARSE_BYTES).
 */
async function appendedItems(
  bytes: Buffer,
  lastEnd: number,
  tail: { readonly arrayEnd: number; readonly ends: readonly number[] },
  maxDepth: number,
): Promise<unknown | undefined> {
  if (tail.arrayEnd - lastEnd > SLICED_PARSE_BYTES && tail.ends.length > 0)
    return parseElements(bytes, lastEnd, tail.ends, maxDepth - 2)
  const between = bytes.toString('utf8', lastEnd, tail.arrayEnd)
  const newText = between.replace(/^\s*,/, '')
  if (newText !== between && newText.trim() === '') return undefined
  return parseJson('[' + newText + ']', maxDepth - 1)
}

function checked(door: Door, json: unknown): Json {
  const result = door.check(json)
  if (!result.ok) throw new LembasError('invalid_request', `not a ${door.label}: ${result.message}`)
  return result.value
}

/**
 * Where a session's last request is remembered: known before the body is read, from the tenant
 * and the session header, or a header that only keeps sessions apart (sessions named in the body
 * alone, or implicit ones, share a key per tenant).
 */
export function spliceKey(
  door: Door,
  headers: Headers,
  sources: SessionSources,
  tenants?: Memo<string>,
): string {
  const header = firstHeader(headers, sources.headers) ?? firstHeader(headers, sources.affinity)
  return door.name + '\u0000' + tenantOf(headers, tenants) + '\u0000' + (header ?? '')
}
