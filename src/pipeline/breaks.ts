import { shortHash } from '../session/identity.js'
import { withoutMarkers } from '../wire/chat.js'
import type { Json } from './door.js'
import type { ItemDigests, SpliceState } from './splice.js'

/**
 * Where a request stopped repeating the session's previous one upstream, and who changed it:
 * every byte after that point is written to the prompt cache, and billed, again.
 */
export interface CacheBreak {
  /** The client item (index in the request's history) where the upstream bytes first differ. */
  readonly item?: number
  /** Its role (or Responses type). */
  readonly role?: string
  /** A field outside the history that changed instead: tools, system or instructions. */
  readonly field?: string
  /**
   * `client`: the client's own bytes differ there (it pruned, rewrote or reordered what it
   * had sent); `proxy`: the client's did not (an `--elide` batch).
   */
  readonly by: 'client' | 'proxy'
  /** The previous request's upstream tokens after the difference (bytes / 4): billed again. */
  readonly tokens: number
}

/** The fields outside the history that a provider's prompt cache keys on (with it). */
const CACHED_FIELDS = ['tools', 'system', 'instructions'] as const

/** Characters per token, as everywhere the proxy estimates. */
const CHARS_PER_TOKEN = 4

/**
 * Digests of the cached fields a request has. Anthropic's `cache_control` markers are left out:
 * moving one does not change what the provider has cached.
 */
export function fixedDigests(request: Json): Record<string, string> {
  const out: Record<string, string> = {}
  for (const field of CACHED_FIELDS)
    if (request[field] !== undefined)
      out[field] = shortHash(JSON.stringify(request[field], withoutMarkers))
  return out
}

/** The first cached field whose digest differs from the previous request's. */
export function changedField(
  before: Record<string, string>,
  now: Record<string, string>,
): string | undefined {
  return CACHED_FIELDS.find((field) => before[field] !== now[field])
}

export interface BreakInput {
  /** The session's previous request, as this process remembers it. */
  readonly previous: SpliceState
  readonly fixed: Record<string, string>
  readonly items: readonly Json[]
  /** This request's item digests, from the start of its history. */
  readonly digests: ItemDigests
  /** This request's upstream bytes of its items, and those before each client item. */
  readonly sentBytes: number
  readonly offsets: () => readonly number[]
  /** Where the newest turn begins after an `--elide` batch this request made: sent uncached either way. */
  readonly batchEnd?: number | undefined
}

/**
 * A cached field the client changed since its previous request: everything after it (the whole
 * history, as providers order a prompt) is billed again. The fast path checks only this: the
 * history it goes on from is the previous request's, byte for byte.
 */
export function fieldBreak(
  previous: Pick<SpliceState, 'fixed' | 'sentBytes'>,
  fixed: Record<string, string>,
): CacheBreak | undefined {
  const field = changedField(previous.fixed, fixed)
  if (field === undefined) return undefined
  return { field, by: 'client', tokens: Math.round(previous.sentBytes / CHARS_PER_TOKEN) }
}

/**
 * The break between the previous request and this one, if this one does not go on from it: the
 * first item whose upstream bytes differ (by digest), and whether the client's differ before it.
 */
export function cacheBreak(input: BreakInput): CacheBreak | undefined {
  const { previous, digests } = input
  const changed = fieldBreak(previous, input.fixed)
  if (changed) return changed
  const item = firstDifferent(previous.digests.upstream, digests.upstream)
  if (item === undefined) return undefined
  const clientSame = firstDifferent(previous.digests.client, digests.client) === undefined
  return itemBreak({
    item,
    raw: input.items[item],
    at: input.offsets()[item] ?? input.sentBytes,
    by: clientSame ? 'proxy' : 'client',
    previousBytes: previous.sentBytes,
    sentBytes: Math.min(input.sentBytes, (clientSame && input.batchEnd) || input.sentBytes),
  })
}

/**
 * A break at client item `item` (`raw`), whose upstream bytes begin `at`: what this request
 * resends from there on was cached before, and is written and billed again.
 */
export function itemBreak(input: {
  readonly item: number
  readonly raw: Json | undefined
  readonly at: number
  readonly by: CacheBreak['by']
  readonly previousBytes: number
  readonly sentBytes: number
}): CacheBreak {
  const role = input.raw?.role ?? input.raw?.type
  return {
    item: input.item,
    ...(typeof role === 'string' ? { role } : {}),
    by: input.by,
    tokens: Math.round(
      Math.max(0, Math.min(input.previousBytes, input.sentBytes) - input.at) / CHARS_PER_TOKEN,
    ),
  }
}

/**
 * The first index where `after` stops repeating `before`, or undefined when it never does:
 * `after` goes on from all of `before`, or ends first (a request cut back is all cached).
 */
export function firstDifferent(
  before: readonly string[],
  after: readonly string[],
): number | undefined {
  const n = Math.min(before.length, after.length)
  for (let i = 0; i < n; i++) if (before[i] !== after[i]) return i
  return undefined
}
