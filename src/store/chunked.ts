import { pacer } from '../pace/index.js'
import type { Store } from './store.js'

/** Keys or entries per backend call. */
export const STORE_CHUNK = 1_000

/**
 * Any store, with every batch split into chunks of `STORE_CHUNK`, one after another, the event
 * loop free between them: a request with tens of thousands of results neither blocks every other
 * session (a SQLite transaction is synchronous) nor builds one huge command. Writes go last chunk
 * first: callers put a batch's renderings before the results they stand for, so a result is
 * always stored before its rendering. Claims go in order, so ids stay in the batch's order.
 */
export function chunkedStore(store: Store): Store {
  return {
    kind: store.kind,
    setLatest: (scope, key, value) => store.setLatest(scope, key, value),
    getLatest: (scope, key) => store.getLatest(scope, key),
    ping: () => store.ping(),
    close: () => store.close(),
    memory: () => store.memory?.() ?? { bytes: 0, entries: 0 },
    async get(scope, keys) {
      if (keys.length <= STORE_CHUNK) return store.get(scope, keys)
      const pace = pacer()
      const out: (string | undefined)[] = []
      for (let i = 0; i < keys.length; i += STORE_CHUNK) {
        await pace()
        for (const value of await store.get(scope, keys.slice(i, i + STORE_CHUNK))) out.push(value)
      }
      return out
    },
    async putIfAbsent(scope, entries) {
      if (entries.length <= STORE_CHUNK) return store.putIfAbsent(scope, entries)
      const pace = pacer()
      const out: string[] = new Array<string>(entries.length)
      const last = Math.floor((entries.length - 1) / STORE_CHUNK) * STORE_CHUNK
      for (let i = last; i >= 0; i -= STORE_CHUNK) {
        await pace()
        const won = await store.putIfAbsent(scope, entries.slice(i, i + STORE_CHUNK))
        won.forEach((value, k) => (out[i + k] = value))
      }
      return out
    },
    async claimThenPut(scope, keys, expected, entries) {
      if (keys.length <= STORE_CHUNK && entries.length <= STORE_CHUNK)
        return store.claimThenPut(scope, keys, expected, entries)
      // Too large for one batch: the claim alone; the caller puts the entries in chunks.
      return { ids: await claimIds(scope, keys) }
    },
    claimIds,
  }

  async function claimIds(scope: string, keys: readonly string[]): Promise<number[]> {
    if (keys.length <= STORE_CHUNK) return store.claimIds(scope, keys)
    const pace = pacer()
    const out: number[] = []
    for (let i = 0; i < keys.length; i += STORE_CHUNK) {
      await pace()
      for (const id of await store.claimIds(scope, keys.slice(i, i + STORE_CHUNK))) out.push(id)
    }
    return out
  }
}
