/**
 * The store contract, shared by every backend (SQLite, Redis, memory).
 *
 * Data lives in scopes: one per session (`<tenant>/<session>`) and one per tenant (`<tenant>`) for
 * the index that finds a session from the messages a request carries. Inside a scope, values are
 * written once: the first writer wins and every later writer reads the winner back. That makes
 * every write idempotent (safe under ioredis' resend after a reconnect) and lets any replica cache
 * a value it has seen forever.
 *
 * Scopes, keys and values are any well-formed strings (empty, NUL and megabytes included); a
 * string with an unpaired UTF-16 surrogate cannot be stored exactly, so calls reject it with
 * LembasError('invalid_request'). A scope that nobody reads or writes for longer than the idle
 * TTL the store was opened with is deleted as a whole, values and counter alike.
 *
 * Failures reject with LembasError('store_unavailable'). A rejected write may still have been
 * applied (the reply can be lost after Redis ran it), so the answer is to retry the same call,
 * which is always safe. After close() every call rejects with store_unavailable.
 */
export interface Store {
  readonly kind: 'sqlite' | 'redis' | 'memory'
  /** One batched read: the value of each key in the scope, or undefined. */
  get(scope: string, keys: readonly string[]): Promise<(string | undefined)[]>
  /**
   * Set-if-absent for every entry, atomically as a batch. Returns, for each entry, the value the
   * store holds afterwards: the entry's own when it was first, the earlier writer's otherwise.
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
  /** Resolves when the store answers; rejects with LembasError('store_unavailable') otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
}
