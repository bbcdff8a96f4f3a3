/**
 * In-process store: for tests and a single replica that may lose its data on restart. Several
 * instances can share one `MemoryState` to stand in for "two replicas on one backend".
 */
import { checkEntries, checkIdleTtl, checkKeys, closedError } from './common.js'
import { sameIds, type Store } from './store.js'

interface MemoryScope {
  readonly kv: Map<string, string>
  readonly latest: Map<string, string>
  readonly claims: Map<string, number>
  next: number
  touchedMs: number
}

export interface MemoryState {
  readonly scopes: Map<string, MemoryScope>
}

export function memoryState(): MemoryState {
  return { scopes: new Map() }
}

export interface MemoryStoreOptions {
  idleTtlMs: number
  state?: MemoryState
  now?: () => number
}

export function memoryStore(options: MemoryStoreOptions): Store {
  checkIdleTtl(options.idleTtlMs)
  const { idleTtlMs } = options
  const { scopes } = options.state ?? memoryState()
  const now = options.now ?? Date.now
  let closed = false

  const expired = (s: MemoryScope, t: number): boolean => t - s.touchedMs > idleTtlMs
  // Sweep so idle sessions do not pile up; unref'd so it never keeps the process alive.
  const sweeper = setInterval(
    () => {
      const t = now()
      for (const [name, s] of scopes) if (expired(s, t)) scopes.delete(name)
    },
    Math.min(Math.max(idleTtlMs, 1000), 3_600_000),
  )
  sweeper.unref()

  /** The live scope (expired ones are dropped first), touched; created only when asked. */
  function scope(name: string, create: true): MemoryScope
  function scope(name: string, create: false): MemoryScope | undefined
  function scope(name: string, create: boolean): MemoryScope | undefined {
    const t = now()
    let s = scopes.get(name)
    if (s && expired(s, t)) {
      scopes.delete(name)
      s = undefined
    }
    if (!s && create) {
      s = { kv: new Map(), latest: new Map(), claims: new Map(), next: 1, touchedMs: t }
      scopes.set(name, s)
    }
    if (s) s.touchedMs = t
    return s
  }

  function open(): void {
    if (closed) throw closedError('memory')
  }

  function put(name: string, entries: readonly (readonly [string, string])[]): string[] {
    if (entries.length === 0) return []
    const s = scope(name, true)
    return entries.map(([k, v]) => {
      const old = s.kv.get(k)
      if (old !== undefined) return old
      s.kv.set(k, v)
      return v
    })
  }

  function claim(name: string, keys: readonly string[], floor = 1): number[] {
    if (keys.length === 0) return []
    const s = scope(name, true)
    return keys.map((k) => {
      let n = s.claims.get(k)
      if (n === undefined) {
        s.next = Math.max(s.next, floor)
        n = s.next++
        s.claims.set(k, n)
      }
      return n
    })
  }

  return {
    kind: 'memory',
    async get(name, keys) {
      open()
      checkKeys(name, keys)
      const s = keys.length > 0 ? scope(name, false) : undefined
      return keys.map((k) => s?.kv.get(k))
    },
    async putIfAbsent(name, entries) {
      open()
      checkEntries(name, entries)
      return put(name, entries)
    },
    async claimIds(name, keys) {
      open()
      checkKeys(name, keys)
      return claim(name, keys)
    },
    async claimThenPut(name, keys, expected, entries) {
      open()
      checkKeys(name, keys)
      checkEntries(name, entries)
      const ids = claim(name, keys, expected[0])
      if (!sameIds(ids, expected)) return { ids }
      return { ids, winners: put(name, entries) }
    },
    async setLatest(name, key, value) {
      open()
      checkEntries(name, [[key, value]])
      scope(name, true).latest.set(key, value)
    },
    async getLatest(name, key) {
      open()
      checkKeys(name, [key])
      return scope(name, false)?.latest.get(key)
    },
    async ping() {
      open()
    },
    async close() {
      closed = true
      clearInterval(sweeper)
    },
  }
}
