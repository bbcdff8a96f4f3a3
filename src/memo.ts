import { Lru } from './lru.js'

/**
 * A small answer this process remembers so as not to work it out again on every request (a
 * credential's tenant, a session already listed). Bounded by entries, least recently used
 * dropped first: losing one only costs that work once more.
 */
export class Memo<V> {
  readonly #lru = new Lru<V>()

  constructor(private readonly maxEntries: number) {}

  get(key: string): V | undefined {
    return this.#lru.get(key)
  }

  delete(key: string): void {
    this.#lru.delete(key)
  }

  set(key: string, value: V): void {
    if (this.maxEntries <= 0) return
    // Weighed as its key and a value's few words: for /metrics, not for the bound.
    this.#lru.set(key, value, 2 * key.length + ENTRY_BYTES)
    this.#lru.evictToSize(this.maxEntries)
  }

  /** Entries held, and their estimated bytes. */
  get size(): CacheSize {
    return { entries: this.#lru.size, bytes: this.#lru.weight }
  }
}

/** An entry's memory besides its key: the map's slot, the list node, a short value. */
const ENTRY_BYTES = 120

/** What a bounded in-process cache holds now, for /metrics: entries, and bytes where weighed. */
export interface CacheSize {
  readonly bytes?: number | undefined
  readonly entries: number
}

/** The memos of one serving process, each within `--memo-entries`. */
export class Memos {
  /** A credential's tenant: its hash, worked out once a client. */
  readonly tenants: Memo<string>
  /** Implicit sessions listed under their system prompt already: listing is once a session. */
  readonly listed: Memo<true>
  /** The head (last tool message's key) written for each session: an unchanged one is not written again. */
  readonly heads: Memo<string>
  /** Known tools whose results were unlike their profile, warned about once each. */
  readonly warned: Memo<true>
  /** A session's next id, as this process last claimed: new results are rendered with it first. */
  readonly nextIds: Memo<number>
  /** Keys found with no saved state, and when: not asked again before another save may be there. */
  readonly unsaved: Memo<number>

  constructor(maxEntries: number) {
    this.tenants = new Memo(maxEntries)
    this.listed = new Memo(maxEntries)
    this.heads = new Memo(maxEntries)
    this.warned = new Memo(maxEntries)
    this.nextIds = new Memo(maxEntries)
    this.unsaved = new Memo(maxEntries)
  }

  /** Each memo, by the name /metrics gives it. */
  named(): [string, Memo<unknown>][] {
    return [
      ['tenants', this.tenants],
      ['listed_sessions', this.listed],
      ['session_heads', this.heads],
      ['warned_tools', this.warned],
      ['next_ids', this.nextIds],
      ['unsaved_keys', this.unsaved],
    ]
  }
}

/** Entries in each memo (default of `--memo-entries`). */
export const MEMO_ENTRIES = 10_000
