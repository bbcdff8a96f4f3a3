import type { CacheSize } from '../memo.js'

/**
 * The store contract, shared by every backend (SQLite, Redis, memory).
 *
 * Data lives in scopes: one per session (`<tenant>/<session>`) and one per tenant (`<tenant>`) for
 * the index that finds a session from the messages a request carries. A scope holds two kinds of
 * values, in two disjoint namespaces (a key written with one kind is invisible to the other):
 *
 * - Write-once values (get, putIfAbsent, and the numbers of claimIds): the first writer wins and
 *   every later writer reads the winner back. That makes every write idempotent (safe under
 *   ioredis' resend after a reconnect) and lets any replica cache a value it has seen forever.
 *   Almost everything is one of these.
 * - Latest values (setLatest, getLatest), for the few per-session pointers that move on (the
 *   latest request's last message, the last compaction's watermark): the last writer wins, as the
 *   backend orders the writes. Writing the same value again is harmless, so a resend is safe too,
 *   but a resent older write can land after a newer one: store only values where that is
 *   acceptable. They are never cached; every getLatest asks the backend.
 *
 * Scopes, keys and values are any well-formed strings (empty, NUL and megabytes included); a
 * string with an unpaired UTF-16 surrogate cannot be stored exactly, so calls reject it with
 * LembasError('invalid_request'). A scope that nobody reads or writes for longer than the idle
 * TTL the store was opened with is deleted as a whole: values of both kinds and counter alike.
 *
 * Failures reject with LembasError('store_unavailable'). A rejected write may still have been
 * applied (the reply can be lost after Redis ran it), so the answer is to retry the same call,
 * which is always safe. After close() every call rejects with store_unavailable.
 */
export interface Store {
  readonly kind: 'sqlite' | 'redis' | 'memory'
  /** One batched read: the write-once value of each key in the scope, or undefined. */
  get(scope: string, keys: readonly string[]): Promise<(string | undefined)[]>
  /**
   * Set-if-absent for every entry, atomically as a batch (createStore splits a batch of more
   * than 1,000 into such batches, last first: see chunked.ts). Returns, for each entry, the value
   * the store holds afterwards: the entry's own when it was first, the earlier writer's otherwise.
   */
  putIfAbsent(
    scope: string,
    entries: readonly (readonly [key: string, value: string])[],
  ): Promise<string[]>
  /**
   * Atomically gives each key a number: a key claimed before keeps its number; new keys get the
   * next numbers of the scope's counter (from 1), in the order given. Idempotent.
   */
  claimIds(scope: string, keys: readonly string[]): Promise<number[]>
  /**
   * claimIds, and then, only when it gives exactly the numbers `expected` (in order), putIfAbsent
   * of `entries`: atomically, as one batch. A caller that knows the scope's next numbers renders
   * with them before the claim and writes in one round trip (one commit) instead of two.
   * `winners` (as putIfAbsent returns them) is there only when the entries were written; a store
   * may also leave them unwritten when the ids match (createStore does for a batch larger than one
   * chunk), and the caller then puts them itself. Idempotent. New keys are numbered from no lower
   * than `expected[0]`: a caller expects the numbers after those it was given, so a counter behind
   * them (a scope the store lost: Redis restarted empty, an idle scope expired, while the process
   * still sends its history) never hands out a number that history already shows.
   */
  claimThenPut(
    scope: string,
    keys: readonly string[],
    expected: readonly number[],
    entries: readonly (readonly [key: string, value: string])[],
  ): Promise<ClaimedPut>
  /**
   * Sets the latest value of `key` in the scope, replacing any earlier one (last writer wins).
   * Refreshes the scope's idle TTL like every other write. Never visible to get/putIfAbsent.
   */
  setLatest(scope: string, key: string, value: string): Promise<void>
  /** The latest value of `key` in the scope, or undefined; always read from the backend. */
  getLatest(scope: string, key: string): Promise<string | undefined>
  /** Resolves when the store answers; rejects with LembasError('store_unavailable') otherwise. */
  ping(): Promise<void>
  /** What this process holds for the store (its read cache), where it keeps any. */
  memory?(): CacheSize
  close(): Promise<void>
}

/** What claimThenPut did: the numbers the keys have, and the entries' winners if it wrote them. */
export interface ClaimedPut {
  readonly ids: number[]
  readonly winners?: string[] | undefined
}

/** Whether a claim gave the numbers a caller rendered with. */
export function sameIds(ids: readonly number[], expected: readonly number[]): boolean {
  return ids.length === expected.length && ids.every((id, i) => id === expected[i])
}
