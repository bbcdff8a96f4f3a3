import type { Store } from '../store/store.js'
import type { StatsSink } from './index.js'

/** The store, with each call's duration recorded (lembas_store_duration_seconds). */
export function timedStore(store: Store, stats: StatsSink): Store {
  const timed =
    <A extends unknown[], R>(name: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const started = performance.now()
      try {
        const out = await call(...args)
        stats.recordStore(name, performance.now() - started, true)
        return out
      } catch (error) {
        stats.recordStore(name, performance.now() - started, false)
        throw error
      }
    }
  return {
    kind: store.kind,
    ping: () => store.ping(),
    close: () => store.close(),
    get: timed('get', store.get.bind(store)),
    putIfAbsent: timed('putIfAbsent', store.putIfAbsent.bind(store)),
    claimIds: timed('claimIds', store.claimIds.bind(store)),
    claimThenPut: timed('claimThenPut', store.claimThenPut.bind(store)),
    setLatest: timed('setLatest', store.setLatest.bind(store)),
    getLatest: timed('getLatest', store.getLatest.bind(store)),
  }
}
