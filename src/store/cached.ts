/**
 * A read-through cache in front of any Store. Values and claimed numbers never change once
 * written (first writer wins), so whatever the backend returned can be reused without asking
 * again. The one limit is the idle TTL: the backend forgets a scope nobody touched, so an entry
 * is trusted only for `maxAgeMs` after the backend last confirmed it (createStore passes half the
 * idle TTL), which also makes sure the backend sees the scope often enough to keep it alive.
 *
 * Latest values (setLatest, getLatest) do change, so they are never cached: both calls go
 * straight to the backend.
 */
import { closedError } from './common.js'
import type { Store } from './store.js'
import { Lru } from '../lru.js'

export interface CacheOptions {
  /** Bound on the (estimated) memory of the cached entries. Default 4 MiB; 0 disables. */
  maxBytes?: number
  /** How long an entry is trusted after the backend returned it. Default: forever. */
  maxAgeMs?: number
  now?: () => number
}

/**
 * 4 MiB: a request reads the store once, batched, with or without the cache (an edit's base
 * included), so more spares only bytes read; and a busy proxy's cache is full, every MiB of it
 * resident (16 MiB, when file contents filled it, was 17 MB more of the 64-session peak).
 */
export const DEFAULT_CACHE_BYTES = 4 * 1024 * 1024

/**
 * Of the values written, only short ones are kept (ids, short renderings): a long result is
 * written once and read again only by a recall or a request on the full path, which read it
 * then; keeping every result written held about as much memory as the sessions' bodies. A file's
 * content, the base of a later edit's diff, is read with that request's records, in its one
 * batched read: kept here, file contents filled the cache (at 16 MiB, 17 MB of the 64-session
 * peak).
 */
const WRITTEN_CACHE_CHARS = 1024

interface Entry<V> {
  readonly value: V
  readonly atMs: number
}

/** Entries trusted for `maxAgeMs`, within `maxBytes`, the least recently used dropped first. */
class BoundedCache<V> {
  readonly #lru = new Lru<Entry<V>>()

  constructor(
    readonly maxBytes: number,
    readonly maxAgeMs: number,
    readonly now: () => number,
  ) {}

  /** The (estimated) bytes of the entries held. */
  get bytes(): number {
    return this.#lru.weight
  }

  get entries(): number {
    return this.#lru.size
  }

  get(key: string): V | undefined {
    const e = this.#lru.get(key)
    if (!e) return undefined
    if (this.now() - e.atMs > this.maxAgeMs) {
      this.#lru.delete(key)
      return undefined
    }
    return e.value
  }

  set(key: string, value: V, bytes: number): void {
    // One huge value must not flush everything else.
    if (bytes > this.maxBytes / 8) return
    this.#lru.set(key, { value, atMs: this.now() }, bytes)
    this.#lru.evictTo(this.maxBytes)
  }
}

// JS strings take up to 2 bytes per UTF-16 unit; 64 covers the entry's own overhead.
type Entries = readonly (readonly [key: string, value: string])[]

const cost = (...parts: string[]): number => 64 + 2 * parts.reduce((n, p) => n + p.length, 0)
// The scope's length up front keeps (scope, key) pairs from running into each other.
const valueKey = (scope: string, key: string): string => `v${scope.length}:${scope}${key}`
const claimKey = (scope: string, key: string): string => `c${scope.length}:${scope}${key}`

export function cachedStore(inner: Store, options: CacheOptions = {}): Store {
  const lru = new BoundedCache<string | number>(
    options.maxBytes ?? DEFAULT_CACHE_BYTES,
    options.maxAgeMs ?? Infinity,
    options.now ?? Date.now,
  )
  let closed = false
  const open = (): void => {
    if (closed) throw closedError(inner.kind)
  }

  return {
    kind: inner.kind,
    memory: () => ({ bytes: lru.bytes, entries: lru.entries }),
    async get(scope, keys) {
      open()
      const out: (string | undefined)[] = []
      const missing = new Map<string, number[]>()
      keys.forEach((k, i) => {
        const hit = lru.get(valueKey(scope, k)) as string | undefined
        out.push(hit)
        if (hit === undefined) missing.set(k, [...(missing.get(k) ?? []), i])
      })
      if (missing.size === 0) return out
      const asked = [...missing.keys()]
      const values = await inner.get(scope, asked)
      asked.forEach((k, j) => {
        const v = values[j]
        if (v === undefined) return // a miss may be written any moment: never cached
        lru.set(valueKey(scope, k), v, cost(scope, k, v))
        for (const i of missing.get(k)!) out[i] = v
      })
      return out
    },
    async putIfAbsent(scope, entries) {
      open()
      const known = knownValues(scope, entries)
      const todo = entries.filter((_, i) => known[i] === undefined)
      if (todo.length === 0) return known as string[]
      return withWritten(scope, entries, known, await inner.putIfAbsent(scope, todo))
    },
    async claimIds(scope, keys) {
      open()
      return claimIds(scope, keys)
    },
    async claimThenPut(scope, keys, expected, entries) {
      open()
      // A key claimed before (a retry) is known here: its number may not be the next one.
      if (keys.some((k) => lru.get(claimKey(scope, k)) !== undefined))
        return { ids: await claimIds(scope, keys) }
      const known = knownValues(scope, entries)
      const todo = entries.filter((_, i) => known[i] === undefined)
      const { ids, winners } = await inner.claimThenPut(scope, keys, expected, todo)
      keys.forEach((key, i) => lru.set(claimKey(scope, key), ids[i]!, cost(scope, key)))
      if (!winners) return { ids }
      return { ids, winners: withWritten(scope, entries, known, winners) }
    },
    async setLatest(scope, key, value) {
      open()
      await inner.setLatest(scope, key, value)
    },
    async getLatest(scope, key) {
      open()
      return inner.getLatest(scope, key)
    },
    async ping() {
      open()
      await inner.ping()
    },
    async close() {
      closed = true
      await inner.close()
    },
  }

  /** The values of `entries` this process knows already: a write sends only the others. */
  function knownValues(scope: string, entries: Entries): (string | undefined)[] {
    return entries.map(([k]) => lru.get(valueKey(scope, k)) as string | undefined)
  }

  /**
   * Every entry's winner: the known values, and for the others, in order, what the store held
   * after the write (`won`); short ones are kept for later reads.
   */
  function withWritten(
    scope: string,
    entries: Entries,
    known: readonly (string | undefined)[],
    won: readonly string[],
  ): string[] {
    let j = 0
    return known.map((v, i) => {
      if (v !== undefined) return v
      const key = entries[i]![0]
      const w = won[j++]!
      if (w.length <= WRITTEN_CACHE_CHARS) lru.set(valueKey(scope, key), w, cost(scope, key, w))
      return w
    })
  }

  async function claimIds(scope: string, keys: readonly string[]): Promise<number[]> {
    const out: (number | undefined)[] = keys.map(
      (k) => lru.get(claimKey(scope, k)) as number | undefined,
    )
    // New keys keep their relative order, so they get the numbers the full call would give.
    const todo = keys.filter((_, i) => out[i] === undefined)
    if (todo.length > 0) {
      const ids = await inner.claimIds(scope, todo)
      let j = 0
      out.forEach((n, i) => {
        if (n !== undefined) return
        const key = keys[i]!
        const id = ids[j++]!
        out[i] = id
        lru.set(claimKey(scope, key), id, cost(scope, key))
      })
    }
    return out as number[]
  }
}
