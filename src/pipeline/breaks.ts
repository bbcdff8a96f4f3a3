import { shortHash } from '../session/identity.js'
import { piecesBytes } from './body.js'
import type { Json } from './door.js'
import type { SpliceState } from './splice.js'

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

function withoutMarkers(key: string, value: unknown): unknown {
  return key === 'cache_control' ? undefined : value
}

/** The first cached field whose digest differs from the previous request's. */
function changedField(
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
  /** This request's bytes and where its items array opens. */
  readonly body: Buffer
  readonly arrayStart: number
  /** This request's upstream items, and the upstream bytes before each client item. */
  readonly upstream: readonly Buffer[]
  readonly offsets: () => readonly number[]
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

/** The break between the previous request and this one, if this one does not go on from it. */
export function cacheBreak(input: BreakInput): CacheBreak | undefined {
  const { previous } = input
  const changed = fieldBreak(previous, input.fixed)
  if (changed) return changed
  const at = mismatch(previous.items, input.upstream)
  if (at === undefined) return undefined
  const sent = piecesBytes(input.upstream)
  const offsets = input.offsets()
  let item = 0
  while (item + 1 < offsets.length && offsets[item + 1]! <= at) item++
  const clientArray = [previous.prefix.subarray(previous.arrayStart)]
  const clientSame = mismatch(clientArray, [input.body.subarray(input.arrayStart)]) === undefined
  const raw = input.items[item]
  const role = raw?.role ?? raw?.type
  return {
    item,
    ...(typeof role === 'string' ? { role } : {}),
    by: clientSame ? 'proxy' : 'client',
    // What this request resends after the change: cached before, written and billed again.
    tokens: Math.round(Math.max(0, Math.min(previous.sentBytes, sent) - at) / CHARS_PER_TOKEN),
  }
}

/**
 * The offset of the first byte where `after` stops repeating `before` (joined pieces), or
 * undefined when it never does: `after` starts with all of `before`, or ends before it differs
 * (a request cut back to an earlier point is all cached).
 */
export function mismatch(before: readonly Buffer[], after: readonly Buffer[]): number | undefined {
  const a = cursor(before)
  const b = cursor(after)
  let offset = 0
  for (;;) {
    const left = a.rest()
    if (left.length === 0) return undefined
    const right = b.rest()
    if (right.length === 0) return undefined
    const n = Math.min(left.length, right.length)
    const x = left.subarray(0, n)
    const y = right.subarray(0, n)
    if (!x.equals(y)) return offset + firstUnequal(x, y)
    offset += n
    a.skip(n)
    b.skip(n)
  }
}

/** The first differing byte of two unequal buffers of one length: halves compared natively. */
function firstUnequal(x: Buffer, y: Buffer): number {
  let low = 0
  let high = x.length
  while (high - low > 64) {
    const middle = (low + high) >> 1
    if (x.subarray(low, middle).equals(y.subarray(low, middle))) low = middle
    else high = middle
  }
  while (low < high && x[low] === y[low]) low++
  return low
}

function cursor(pieces: readonly Buffer[]) {
  let index = 0
  let at = 0
  return {
    rest(): Buffer {
      while (index < pieces.length && at >= pieces[index]!.length) {
        index++
        at = 0
      }
      return index < pieces.length ? pieces[index]!.subarray(at) : Buffer.alloc(0)
    },
    skip(n: number): void {
      at += n
    },
  }
}
