import type { Json } from './door.js'
import type { Live } from './elide.js'
import type { KeptItems } from './kept.js'
import type { HistoryState } from './rebuild.js'
import { Lru } from '../lru.js'
import { changedField, firstDifferent } from './breaks.js'
import { runningDigest, type RunningDigest } from './prefix-digest.js'
import { skipSpace } from '../wire/json-scan.js'

/**
 * What this process remembers of a session's last request, to handle the next one in time
 * proportional to what it appends: agents resend the whole history every turn, byte for byte,
 * plus a few new messages. A request that starts with the remembered bytes (compared as bytes)
 * reuses the upstream bytes of those messages and the rebuild's state at their end; anything
 * else (a rewind, a rewritten history, a cold replica) takes the full path, with the same result.
 */
export interface SpliceState {
  readonly scope: string
  /** The session was named by the client (a header or a body field). */
  readonly explicit: boolean
  /** The scope the client's session id names, where it goes on another session (a fork's). */
  readonly named?: string | undefined
  /** The system prompt's fingerprint (for listing an implicit session). */
  readonly systemKey: string
  /** Digests of the fields a prompt cache keys on besides the history (see breaks.ts). */
  readonly fixed: Record<string, string>
  /**
   * The request's fields around the array, parsed, and its bytes after the array (those before
   * it are in the prefix): the next request most often sends the same (tools, system), and then
   * they are neither parsed nor digested again.
   */
  readonly rest?: { readonly tail: Buffer; readonly value: Json } | undefined
  /**
   * A summary may stand in the part the next request parses again (held back, as the Messages
   * door holds the last two messages), or right after the remembered end (a marker there): the
   * next request goes the full way, which finds the summary and gives it its table again.
   */
  readonly summaryAhead: boolean
  /** Offset of the items array's `[` in the request bytes. */
  readonly arrayStart: number
  /**
   * The request's bytes up to just after the array's last remembered element, as their length
   * and digest (the bytes themselves are the next request's), and whether they end at the `[`.
   */
  readonly prefix: { readonly length: number; readonly digest: Buffer; readonly opens: boolean }
  /** The upstream bytes of those items (array elements joined by commas), kept small. */
  readonly kept: KeptItems
  /** For each client item of the prefix, digests of its client bytes and of its upstream bytes. */
  readonly digests: ItemDigests
  /** Upstream bytes of all the request's items, the held-back ones too: what a break bills again. */
  readonly sentBytes: number
  /** How many of the client's items the prefix holds, and the digest of the last one. */
  readonly itemCount: number
  readonly lastDigest: string
  readonly history: HistoryState
  /** The tool results those items show in full (for `--elide`'s next batch). */
  readonly live: readonly Live[]
}

export interface ItemDigests {
  readonly client: readonly string[]
  readonly upstream: readonly string[]
}

/** A remembered state this request goes on from, and the digest of its bytes up to there. */
export interface Found {
  readonly state: SpliceState
  /** The running digest at the end of the prefix: the next prefix's goes on from it. */
  readonly hash: RunningDigest
}

/** The digest of a request's bytes up to a remembered end (see prefix-digest.ts). */
export function prefixHash(bytes: Buffer): RunningDigest {
  return runningDigest().update(bytes)
}

/**
 * Digests a body's first bytes at the remembered prefix lengths while it arrives: the fast
 * path's check then costs nothing once the body is in, the hashing having overlapped the
 * receiving.
 */
export class PrefixWatch {
  readonly #hash = runningDigest()
  readonly #targets: number[]
  #at = 0
  readonly #reached = new Map<number, Buffer>()

  constructor(lengths: readonly number[]) {
    this.#targets = [...new Set(lengths)].filter((n) => n > 0).sort((a, b) => a - b)
  }

  /** The body's next bytes, in arrival order. */
  update(chunk: Uint8Array): void {
    let offset = 0
    while (this.#targets.length > 0 && offset < chunk.length) {
      const target = this.#targets[0]!
      const take = Math.min(chunk.length - offset, target - this.#at)
      this.#hash.update(chunk.subarray(offset, offset + take))
      this.#at += take
      offset += take
      if (this.#at === target) {
        this.#reached.set(target, this.#hash.digest())
        this.#targets.shift()
      }
    }
  }

  /** The digest of the body's first `length` bytes, once they have arrived. */
  at(length: number): Buffer | undefined {
    return this.#reached.get(length)
  }

  /**
   * The running digest, to go on from, when it stands at `length`: it goes on past every
   * length but the last (most keys have one state, so one length).
   */
  runningAt(length: number): RunningDigest | undefined {
    return this.#targets.length === 0 && this.#at === length ? this.#hash : undefined
  }
}

export class SpliceCache {
  readonly #byKey = new Lru<readonly SpliceState[]>()
  /** Keys remembered anew since the saver last took them; undefined while nothing saves them. */
  #changed: Set<string> | undefined

  constructor(private readonly maxBytes: number) {}

  /**
   * Bytes held, over all sessions (at most `maxBytes`): the upstream bytes the proxy changed,
   * the fields around the items, digests and each state's dedupe table (its blind line hashes most).
   */
  get bytes(): number {
    return this.#byKey.weight
  }

  /** Sessions remembered. */
  get entries(): number {
    let sessions = 0
    for (const states of this.#byKey.values()) sessions += states.length
    return sessions
  }

  /** A watch for the prefixes remembered under `key`, or undefined when there are none. */
  watch(key: string): PrefixWatch | undefined {
    const states = this.#byKey.peek(key)
    return states && new PrefixWatch(states.map((state) => state.prefix.length))
  }

  /**
   * The remembered state whose bytes this request starts with, followed by more items or the
   * end; `watch` holds the digests taken while the body arrived.
   */
  find(key: string, body: Buffer, watch?: PrefixWatch): Found | undefined {
    for (const state of this.#byKey.peek(key) ?? []) {
      const { length, digest, opens } = state.prefix
      if (body.length <= length) continue
      const next = body[skipSpace(body, length)]
      // After an element comes a comma or the end; a prefix that holds none ends at the `[`.
      if (!opens && next !== 44 /* , */ && next !== 93 /* ] */) continue
      if (opens !== (body[length - 1] === 91) /* [ */) continue
      const watched = watch?.at(length)
      const hash = watched ? watch!.runningAt(length) : prefixHash(body.subarray(0, length))
      if (!(watched ?? hash!.digest()).equals(digest)) continue
      return { state, hash: hash ?? prefixHash(body.subarray(0, length)) }
    }
    return undefined
  }

  /** Every state remembered under `key` (a few sessions), most recent first. */
  states(key: string): readonly SpliceState[] {
    return this.#byKey.peek(key) ?? []
  }

  /** Every key's states, least recently used first: what a stopping process hands on. */
  all(): Generator<readonly [string, readonly SpliceState[]]> {
    return this.#byKey.entries()
  }

  /**
   * From now on, keeps which keys get new states: each call of the function returned gives
   * those remembered since its previous call (states adopted from another process are not new).
   */
  trackChanges(): () => string[] {
    this.#changed ??= new Set()
    const changed = this.#changed
    return () => {
      const keys = [...changed]
      changed.clear()
      return keys
    }
  }

  /** States another process remembered under `key`, most recent first, as this process's own. */
  adopt(key: string, states: readonly SpliceState[]): void {
    for (const state of [...states].reverse()) this.#remember(key, state)
  }

  remember(key: string, state: SpliceState): void {
    if (this.#remember(key, state)) this.#changed?.add(key)
  }

  /** Whether the state was kept (the cache may be off). */
  #remember(key: string, state: SpliceState): boolean {
    if (this.maxBytes <= 0) return false
    const previous = this.#byKey.peek(key) ?? []
    // A key holds a few conversations: implicit sessions of one tenant share it, and one session
    // can hold several (Claude Code's subagents send theirs under the main one's id). A state
    // goes when this one continues it.
    const states = [state, ...previous.filter((old) => !continues(state, old))].slice(
      0,
      STATES_PER_KEY,
    )
    this.#byKey.set(key, states, size(states))
    this.#byKey.evictTo(this.maxBytes, key)
    return true
  }
}

/** Conversations remembered under one key: a session and the subagents it runs at once. */
const STATES_PER_KEY = 8

/**
 * Whether `next` goes on from `old`: the same session, its items beginning with old's. A state
 * that holds no item yet (a conversation's first request on /v1/messages keeps its last two
 * back) is gone on from only with the same tools and system: a subagent's first request, with
 * tools of its own, is another conversation.
 */
function continues(next: SpliceState, old: SpliceState): boolean {
  if (old.scope !== next.scope) return false
  const [before, after] = [old.digests.client, next.digests.client]
  if (before.length === 0 && changedField(old.fixed, next.fixed) !== undefined) return false
  return before.length <= after.length && firstDifferent(before, after) === undefined
}

/**
 * Of the states this process remembers of a session, the one a request whose items have these
 * digests goes on from: the longest shared beginning. One with no item in the same place is
 * another conversation of the session (a subagent's); a history rewritten from its first item
 * (a system message that changed) still shares the items after it. One that shares at most its
 * first item (the agent's system message) and has other tools or another system is another
 * conversation too: opencode's and Kilo's subagents start with the main one's system message.
 */
export function closestState(
  states: readonly SpliceState[],
  scope: string,
  client: readonly string[],
  fixed: Record<string, string>,
): SpliceState | undefined {
  let best: SpliceState | undefined
  let bestShared = -1
  for (const state of states) {
    if (state.scope !== scope) continue
    const before = state.digests.client
    const shared = firstDifferent(before, client) ?? Math.min(before.length, client.length)
    if (shared === 0 && !before.some((digest, i) => digest === client[i])) continue
    if (shared <= 1 && changedField(state.fixed, fixed) !== undefined) continue
    if (shared > bestShared) [best, bestShared] = [state, shared]
  }
  return best
}

function size(states: readonly SpliceState[]): number {
  return states.reduce(
    (sum, state) =>
      sum +
      (state.rest?.tail.length ?? 0) +
      state.history.table.weight +
      state.kept.weight +
      // Two digests of 27 characters for each item, with the strings' own overhead.
      state.digests.client.length * 2 * 48,
    0,
  )
}
