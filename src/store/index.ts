/**
 * Opening a store from its configuration string. Every store comes wrapped in the value cache.
 * Each backend's module (and its client library) is loaded only when it is the one configured:
 * ioredis alone was about 14 MB of an idle SQLite proxy's resident memory, better-sqlite3 a few.
 */
import { homedir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import { LembasError } from '../errors.js'
import { chunkedStore } from './chunked.js'
import { cachedStore } from './cached.js'
import { checkIdleTtl, redactUrl } from './common.js'
import { memoryStore } from './memory.js'
import type { Store } from './store.js'

export type { Store } from './store.js'

export interface StoreOptions {
  /** A scope nobody read or wrote for this long is deleted. */
  idleTtlMs: number
  /** Bytes of values kept in this process; default 4 MiB, 0 disables the cache. */
  cacheBytes?: number
  /** SQLite: a write waited for another process's lock (see SqliteStoreOptions). */
  onLockWait?: ((ms: number, ok: boolean) => void) | undefined
}

const ACCEPTED =
  'sqlite:PATH (relative to the working directory or absolute), sqlite::memory:, ' +
  'redis://[user:password@]host[:port][/db], rediss://… (TLS), or memory:'

/** Opens the store `spec` names; rejects with config_invalid or store_unavailable. */
export async function createStore(spec: string, options: StoreOptions): Promise<Store> {
  checkIdleTtl(options.idleTtlMs)
  const { idleTtlMs } = options
  let store: Store
  if (spec === 'memory:') {
    store = memoryStore({ idleTtlMs })
  } else if (spec.startsWith('sqlite:') && spec.length > 'sqlite:'.length) {
    const path = spec.slice('sqlite:'.length)
    const { openSqliteStore } = await import('./sqlite.js')
    store = openSqliteStore(path === ':memory:' ? path : resolve(path), {
      idleTtlMs,
      ...(options.onLockWait ? { onLockWait: options.onLockWait } : {}),
    })
  } else if (/^rediss?:\/\/./i.test(spec)) {
    const { openRedisStore } = await import('./redis.js')
    store = await openRedisStore(spec, { idleTtlMs })
  } else {
    throw new LembasError(
      'config_invalid',
      `store "${redactUrl(spec)}" is not understood; expected ${ACCEPTED}`,
    )
  }
  // Half the idle TTL: a cached entry is never trusted after the backend may have dropped it.
  // Chunked outermost: the cache, too, sees bounded batches.
  return chunkedStore(
    cachedStore(store, {
      maxBytes: options.cacheBytes,
      maxAgeMs: idleTtlMs / 2,
    }),
  )
}

/** `$XDG_STATE_HOME/lembas-proxy/store.db`, else `~/.local/state/lembas-proxy/store.db`. */
export function defaultSqlitePath(env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  // The XDG spec says to ignore a relative XDG_STATE_HOME.
  const state = env.XDG_STATE_HOME
  const base = state && isAbsolute(state) ? state : join(home, '.local', 'state')
  return join(base, 'lembas-proxy', 'store.db')
}
