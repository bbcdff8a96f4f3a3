/**
 * Embedded store on one SQLite file (better-sqlite3, synchronous). Writes wait for the next turn
 * of the event loop and commit together in one BEGIN IMMEDIATE transaction (a group commit:
 * with many sessions at once, one commit serves all their writes), each in its own savepoint,
 * so several processes on one file stay atomic and a failed batch leaves nothing behind.
 * Scopes untouched for longer than the idle TTL are deleted.
 *
 * The kv table holds write-once values, claims and latest values alike, told apart by the
 * reserved field names of common.ts (so no schema change was needed for latest values, and a
 * scope's deletion covers them all).
 */
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { LembasError } from '../errors.js'
import {
  checkEntries,
  checkIdleTtl,
  checkKeys,
  claimField,
  closedError,
  kvField,
  latestField,
} from './common.js'
import { sameIds, type ClaimedPut, type Store } from './store.js'

const SCHEMA_VERSION = 1

// kv is a rowid table on purpose: values can be megabytes, which WITHOUT ROWID handles badly.
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS kv (
    scope TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (scope, key)
  ) STRICT;
  CREATE TABLE IF NOT EXISTS counters (scope TEXT PRIMARY KEY, next INTEGER NOT NULL) STRICT;
  CREATE TABLE IF NOT EXISTS scopes (scope TEXT PRIMARY KEY, touched_ms INTEGER NOT NULL) STRICT;
  CREATE INDEX IF NOT EXISTS scopes_by_touched ON scopes (touched_ms);
`

export interface SqliteStoreOptions {
  idleTtlMs: number
  /** How long a write waits for another connection's lock before failing. */
  busyTimeoutMs?: number
  /**
   * Called after a write waited for another connection's lock (`--workers`, several processes
   * on one file): how long, and whether it got it in time (lembas_store_duration_seconds).
   */
  onLockWait?: (ms: number, ok: boolean) => void
  now?: () => number
  /** The log is checkpointed once no write has come for this long (default 200 ms). */
  checkpointIdleMs?: number
  /**
   * …or at once when this much has been written since the last checkpoint (default 4 MiB).
   * 0: SQLite's own, inside the commit that takes the log past 1000 pages (for comparison).
   */
  checkpointBytes?: number
}

/** Defaults of the checkpoints (see SqliteStore): a model's turn is longer than the pause. */
export const CHECKPOINT_IDLE_MS = 200
export const CHECKPOINT_BYTES = 4 * 1024 * 1024

export function openSqliteStore(file: string, options: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(file, options)
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite'
  /** The raw handle, for diagnostics and tests; writing through it bypasses the contract. */
  readonly db: Database.Database
  readonly #file: string
  readonly #idleTtlMs: number
  /** A scope's time is rewritten only once it is this old: a minute, or a tenth of the TTL. */
  readonly #retouchAfterMs: number
  readonly #now: () => number
  readonly #sweeper: NodeJS.Timeout
  readonly #checkpointIdleMs: number
  readonly #checkpointBytes: number
  /** Bytes written (keys and values, as given) since the last checkpoint. */
  #unchecked = 0
  /** When the last group commit ended, and the timer that checkpoints after a pause. */
  #lastCommitMs = 0
  #idleTimer: NodeJS.Timeout | undefined
  #closed = false
  readonly #busyTimeoutMs: number
  readonly #onLockWait: ((ms: number, ok: boolean) => void) | undefined
  /** While the waiting writes wait for another connection's lock: since when, and the retry. */
  #lockWaitSince: number | undefined
  #retry: NodeJS.Timeout | undefined
  #retries = 0

  readonly #getValue
  readonly #insertValue
  readonly #upsertValue
  readonly #getNext
  readonly #setNext
  readonly #touch
  readonly #touchedAt
  readonly #retouch
  readonly #readBatch
  readonly #putBatch
  readonly #claimBatch
  readonly #claimThenPutBatch
  readonly #setLatestBatch
  readonly #sweepBatch
  readonly #group
  /** Writes waiting for the group commit. */
  #pending: PendingWrite[] = []

  constructor(file: string, options: SqliteStoreOptions) {
    checkIdleTtl(options.idleTtlMs)
    this.#file = file
    this.#idleTtlMs = options.idleTtlMs
    this.#checkpointIdleMs = options.checkpointIdleMs ?? CHECKPOINT_IDLE_MS
    this.#checkpointBytes = options.checkpointBytes ?? CHECKPOINT_BYTES
    this.#retouchAfterMs = Math.min(60_000, options.idleTtlMs / 10)
    this.#now = options.now ?? Date.now
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000
    this.#onLockWait = options.onLockWait
    let db: Database.Database | undefined
    try {
      // Every tool result and prompt of every session lives here: the proxy's user only. A file
      // that exists keeps the mode its owner gave it (SQLite's log files take the same).
      const created = file !== ':memory:' && !existsSync(file)
      if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
      db = new Database(file, { timeout: this.#busyTimeoutMs })
      if (created) chmodSync(file, 0o600)
      // WAL: readers never block the writer. NORMAL: a commit survives the process being
      // killed (what the proxy must survive); only a power cut can take the last ones, which
      // are then simply rendered again. FULL would fsync every request and cost the
      // throughput of the whole proxy (bench: c=32 was disk-bound under FULL).
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = NORMAL')
      // SQLite's own checkpoint runs inside the commit that fills the log past 1000 pages: an
      // fsync on the event loop (12-16 ms at 1 MB sessions, every ~100 requests), which every
      // session waits for. This store checkpoints when writes pause instead (see #committed).
      if (this.#checkpointBytes > 0) db.pragma('wal_autocheckpoint = 0')
      db.transaction(() => {
        const version = db!.pragma('user_version', { simple: true }) as number
        if (version > SCHEMA_VERSION) {
          throw new LembasError(
            'store_unavailable',
            `sqlite store ${file}: schema version ${version} is newer than this proxy (${SCHEMA_VERSION}); upgrade lembas-proxy`,
          )
        }
        db!.exec(SCHEMA)
        // Written even when unchanged: a read-only file then fails here, not at the first request.
        db!.pragma(`user_version = ${SCHEMA_VERSION}`)
      }).immediate()
    } catch (err) {
      db?.close()
      throw this.#fail(err, 'open')
    }
    this.db = db

    this.#getValue = db.prepare<[string, string], string>(
      'SELECT value FROM kv WHERE scope = ? AND key = ?',
    )
    this.#getValue.pluck()
    this.#insertValue = db.prepare<[string, string, string]>(
      'INSERT OR IGNORE INTO kv (scope, key, value) VALUES (?, ?, ?)',
    )
    this.#upsertValue = db.prepare<[string, string, string]>(
      'INSERT INTO kv (scope, key, value) VALUES (?, ?, ?) ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value',
    )
    this.#getNext = db.prepare<[string], number>('SELECT next FROM counters WHERE scope = ?')
    this.#getNext.pluck()
    this.#setNext = db.prepare<[string, number]>(
      'INSERT INTO counters (scope, next) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET next = excluded.next',
    )
    this.#touch = db.prepare<[string, number]>(
      'INSERT INTO scopes (scope, touched_ms) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET touched_ms = excluded.touched_ms',
    )
    this.#touchedAt = db.prepare<[string], number>('SELECT touched_ms FROM scopes WHERE scope = ?')
    this.#touchedAt.pluck()
    this.#retouch = db.prepare<[number, string]>('UPDATE scopes SET touched_ms = ? WHERE scope = ?')
    const staleScopes = db.prepare<[number], string>(
      'SELECT scope FROM scopes WHERE touched_ms < ? LIMIT 100',
    )
    staleScopes.pluck()
    const deletes = ['kv', 'counters', 'scopes'].map((t) =>
      db.prepare<[string]>(`DELETE FROM ${t} WHERE scope = ?`),
    )
    const drop = (scope: string): void => {
      for (const del of deletes) del.run(scope)
    }
    // A write to a scope that expired but was not swept yet starts it afresh, as Redis would.
    // A recent time is left as it is: rewriting it (and its index entry) on every write made
    // each commit log two more pages.
    const touch = (scope: string): void => {
      const t = this.#now()
      const touched = this.#touchedAt.get(scope)
      if (touched !== undefined && t - touched > this.#idleTtlMs) drop(scope)
      else if (touched !== undefined && t - touched <= this.#retouchAfterMs) return
      this.#touch.run(scope, t)
    }

    // A deferred transaction: the values and the touch time come from one snapshot. Takes the
    // stored field names (kvField or latestField of the caller's keys).
    this.#readBatch = db.transaction((scope: string, fields: readonly string[]) => ({
      values: fields.map((f) => this.#getValue.get(scope, f)),
      touchedMs: this.#touchedAt.get(scope),
    }))
    this.#putBatch = db.transaction(
      (scope: string, entries: readonly (readonly [string, string])[]) => {
        touch(scope)
        return entries.map(([k, v]) => {
          const field = kvField(k)
          if (this.#insertValue.run(scope, field, v).changes === 1) return v
          return this.#getValue.get(scope, field)!
        })
      },
    )
    this.#claimBatch = db.transaction((scope: string, keys: readonly string[], floor = 1) => {
      touch(scope)
      let next = this.#getNext.get(scope) ?? 1
      const ids = keys.map((k) => {
        const field = claimField(k)
        const old = this.#getValue.get(scope, field)
        if (old !== undefined) return Number(old)
        next = Math.max(next, floor)
        this.#insertValue.run(scope, field, String(next))
        return next++
      })
      this.#setNext.run(scope, next)
      return ids
    })
    // Nested transactions are savepoints: the claim and the writes commit together or not at all.
    this.#claimThenPutBatch = db.transaction(
      (
        scope: string,
        keys: readonly string[],
        expected: readonly number[],
        entries: readonly (readonly [string, string])[],
      ): ClaimedPut => {
        const ids = keys.length === 0 ? [] : this.#claimBatch(scope, keys, expected[0] ?? 1)
        if (!sameIds(ids, expected)) return { ids }
        return { ids, winners: entries.length === 0 ? [] : this.#putBatch(scope, entries) }
      },
    )
    this.#setLatestBatch = db.transaction((scope: string, key: string, value: string) => {
      touch(scope)
      this.#upsertValue.run(scope, latestField(key), value)
    })
    // Each write in its own savepoint: one that fails is undone alone, the others commit.
    this.#group = db.transaction((writes: readonly PendingWrite[]) =>
      writes.map((write): Outcome => {
        try {
          return { ok: true, value: write.run() }
        } catch (error) {
          // A full disk or an I/O error rolls the whole transaction back: all fail with it.
          if (!db.inTransaction) throw error
          return { ok: false, error }
        }
      }),
    )
    // In chunks, so a sweep of many scopes never holds the write lock for long.
    this.#sweepBatch = db.transaction((cutoffMs: number) => {
      const stale = staleScopes.all(cutoffMs)
      for (const scope of stale) drop(scope)
      return stale.length
    })

    try {
      this.sweep()
    } catch (err) {
      db.close()
      throw err
    }
    // Sweep while running too; unref'd so it never keeps the process alive.
    const every = Math.min(Math.max(Math.floor(this.#idleTtlMs / 4), 1000), 3_600_000)
    this.#sweeper = setInterval(() => {
      try {
        this.sweep()
      } catch {
        // Busy or read-only right now: the next sweep (or the next open) retries.
      }
    }, every)
    this.#sweeper.unref()
    // From here on a lock held by another connection is waited for on timers (#flush), not in
    // SQLite's busy handler, which sleeps inside the call: the whole process, every other
    // request and stream with it, stood still for as long as another worker held the lock.
    db.pragma('busy_timeout = 0')
  }

  /** Deletes every scope untouched for longer than the idle TTL. Returns how many. */
  sweep(): number {
    const cutoff = this.#now() - this.#idleTtlMs
    let total = 0
    for (;;) {
      const n = this.#run('sweep', () => this.#sweepBatch.immediate(cutoff))
      total += n
      if (n < 100) return total
    }
  }

  async get(scope: string, keys: readonly string[]): Promise<(string | undefined)[]> {
    this.#open()
    checkKeys(scope, keys)
    if (keys.length === 0) return []
    return this.#reading(() => this.#read('get', scope, keys.map(kvField)))
  }

  async putIfAbsent(
    scope: string,
    entries: readonly (readonly [key: string, value: string])[],
  ): Promise<string[]> {
    this.#open()
    checkEntries(scope, entries)
    if (entries.length === 0) return []
    return this.#write('putIfAbsent', () => this.#putBatch(scope, entries), sizeOf(entries))
  }

  async claimIds(scope: string, keys: readonly string[]): Promise<number[]> {
    this.#open()
    checkKeys(scope, keys)
    if (keys.length === 0) return []
    return this.#write('claimIds', () => this.#claimBatch(scope, keys), CLAIM_BYTES * keys.length)
  }

  async claimThenPut(
    scope: string,
    keys: readonly string[],
    expected: readonly number[],
    entries: readonly (readonly [key: string, value: string])[],
  ): Promise<ClaimedPut> {
    this.#open()
    checkKeys(scope, keys)
    checkEntries(scope, entries)
    return this.#write(
      'claimThenPut',
      () => this.#claimThenPutBatch(scope, keys, expected, entries),
      CLAIM_BYTES * keys.length + sizeOf(entries),
    )
  }

  async setLatest(scope: string, key: string, value: string): Promise<void> {
    this.#open()
    checkEntries(scope, [[key, value]])
    await this.#write(
      'setLatest',
      () => this.#setLatestBatch(scope, key, value),
      key.length + value.length,
    )
  }

  async getLatest(scope: string, key: string): Promise<string | undefined> {
    this.#open()
    checkKeys(scope, [key])
    const [value] = await this.#reading(() => this.#read('getLatest', scope, [latestField(key)]))
    return value
  }

  async ping(): Promise<void> {
    this.#open()
    this.#run('ping', () => this.db.prepare('SELECT 1').get())
  }

  async close(): Promise<void> {
    if (this.#closed) return
    // The last writes wait for the lock in place: nothing else is served any more.
    clearTimeout(this.#retry)
    this.db.pragma(`busy_timeout = ${this.#busyTimeoutMs}`)
    this.#closed = true
    this.#flush()
    clearInterval(this.#sweeper)
    clearTimeout(this.#idleTimer)
    this.db.close()
  }

  #open(): void {
    if (this.#closed) throw closedError('sqlite')
  }

  /** The stored fields of a scope, or undefined for each once it expired; touches it. */
  #read(op: string, scope: string, fields: readonly string[]): (string | undefined)[] {
    const { values, touchedMs } = this.#run(op, () => this.#readBatch.deferred(scope, fields))
    if (touchedMs === undefined) return values
    const age = this.#now() - touchedMs
    // Expired but not swept yet: gone, as in Redis.
    if (age > this.#idleTtlMs) return fields.map(() => undefined)
    // Reads keep a scope alive too, but rewrite its time only when it is noticeably old, so
    // that reads stay (almost always) lock-free.
    if (age > this.#retouchAfterMs) {
      try {
        this.#retouch.run(this.#now(), scope)
      } catch (err) {
        // Another connection writes right now: a later read or write touches it.
        if (!isBusy(err)) throw this.#fail(err, op)
      }
    }
    return values
  }

  /**
   * A read, again a moment later while another connection holds a lock it needs. In WAL mode
   * readers wait for no writer; only rare moments (a connection recovering the log after a
   * crash, the last one closing) hold them off.
   */
  async #reading<T>(read: () => T): Promise<T> {
    const started = performance.now()
    for (let attempt = 0; ; attempt++) {
      try {
        return read()
      } catch (err) {
        const cause = err instanceof LembasError ? err.cause : err
        if (!isBusy(cause) || performance.now() - started >= this.#busyTimeoutMs) throw err
        await new Promise((resolve) => setTimeout(resolve, retryDelayMs(attempt)))
      }
    }
  }

  /** Queues a write for the group commit at the next turn of the event loop. */
  #write<T>(op: string, run: () => T, bytes: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.#pending.length === 0 && this.#retry === undefined) setImmediate(() => this.#flush())
      this.#pending.push({ op, run, bytes, resolve: resolve as (value: unknown) => void, reject })
    })
  }

  /**
   * After a group commit: the log is checkpointed (its pages copied into the database, with an
   * fsync) once writes pause for `checkpointIdleMs` with a quarter of `checkpointBytes` or more
   * in it — between an agent's turns, while its model thinks — or right after the commit when
   * `checkpointBytes` were written without a pause (a busy proxy: the log stays bounded). PASSIVE: it never waits for another process's readers or writer.
   */
  #committed(bytes: number): void {
    if (this.#checkpointBytes === 0) return
    this.#unchecked += bytes
    this.#lastCommitMs = performance.now()
    if (this.#unchecked >= this.#checkpointBytes) {
      // After the writers' own continuations: their requests go on (upstream) first.
      this.#unchecked = 0
      setImmediate(() => this.checkpoint())
      return
    }
    // A checkpoint makes the next commit start the log afresh, which costs it about 0.8 ms: a
    // pause is used only once there is enough to copy for that to be worth it.
    if (this.#idleTimer || this.#unchecked < this.#checkpointBytes / 4) return
    const wait = (ms: number): void => {
      this.#idleTimer = setTimeout(() => {
        const since = performance.now() - this.#lastCommitMs
        if (since < this.#checkpointIdleMs) wait(this.#checkpointIdleMs - since)
        else this.checkpoint()
      }, ms)
      this.#idleTimer.unref()
    }
    wait(this.#checkpointIdleMs)
  }

  /** Copies the log into the database now (PASSIVE); busy or failing, the next one retries. */
  checkpoint(): void {
    clearTimeout(this.#idleTimer)
    this.#idleTimer = undefined
    if (this.#closed) return
    this.#unchecked = 0
    try {
      this.db.pragma('wal_checkpoint(PASSIVE)')
    } catch {
      // Busy or read-only right now: the log keeps its pages until the next checkpoint.
    }
  }

  /** Commits the waiting writes in one transaction; each caller learns its own outcome. */
  #flush(): void {
    this.#retry = undefined
    const writes = this.#pending
    if (writes.length === 0) return
    this.#pending = []
    let outcomes: Outcome[]
    try {
      outcomes = this.#group.immediate(writes)
    } catch (err) {
      if (isBusy(err) && this.#waitForLock(writes)) return
      this.#lockWaitEnded(false)
      // The transaction itself failed (the lock, the disk): every write in it with it.
      for (const write of writes) write.reject(this.#fail(err, write.op))
      return
    }
    this.#lockWaitEnded(true)
    this.#committed(writes.reduce((n, write) => n + write.bytes, 0))
    outcomes.forEach((outcome, i) => {
      const write = writes[i]!
      if (outcome.ok) write.resolve(outcome.value)
      else write.reject(this.#fail(outcome.error, write.op))
    })
  }

  /**
   * Another connection holds the write lock: the writes go back in front of the queue (those
   * that come meanwhile join them in the same commit) and are tried again on a timer, until
   * `busyTimeoutMs` has passed. False once it has: they fail.
   */
  #waitForLock(writes: PendingWrite[]): boolean {
    const now = performance.now()
    this.#lockWaitSince ??= now
    if (this.#closed || now - this.#lockWaitSince >= this.#busyTimeoutMs) return false
    this.#pending = [...writes, ...this.#pending]
    this.#retry = setTimeout(() => this.#flush(), retryDelayMs(this.#retries++))
    return true
  }

  #lockWaitEnded(ok: boolean): void {
    if (this.#lockWaitSince === undefined) return
    this.#onLockWait?.(performance.now() - this.#lockWaitSince, ok)
    this.#lockWaitSince = undefined
    this.#retries = 0
  }

  #run<T>(op: string, fn: () => T): T {
    try {
      return fn()
    } catch (err) {
      throw this.#fail(err, op)
    }
  }

  /** SQLite and file-system failures become store_unavailable, naming the file and the cause. */
  #fail(err: unknown, op: string): Error {
    if (err instanceof LembasError) return err
    if (err instanceof Database.SqliteError || isSystemError(err)) {
      const code = String((err as { code?: unknown }).code)
      const message = (err as Error).message
      const cause = message.startsWith(code) ? message : `${code}: ${message}`
      return new LembasError(
        'store_unavailable',
        `sqlite store ${this.#file}: ${op} failed: ${cause}`,
        {
          cause: err,
        },
      )
    }
    return new LembasError('internal', `sqlite store ${this.#file}: ${op} failed: ${String(err)}`, {
      cause: err,
    })
  }
}

interface PendingWrite {
  readonly op: string
  readonly run: () => unknown
  /** About what it writes: its keys and values' length (for the checkpoints). */
  readonly bytes: number
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

type Outcome =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }

/** SQLITE_BUSY and its extended codes: another connection holds a lock this call needs. */
function isBusy(err: unknown): boolean {
  return err instanceof Database.SqliteError && err.code.startsWith('SQLITE_BUSY')
}

/** 1, 2, 4, 8, then 10 ms between tries: a commit of another worker takes about a millisecond. */
function retryDelayMs(attempt: number): number {
  return Math.min(2 ** attempt, 10)
}

function isSystemError(err: unknown): boolean {
  return err instanceof Error && typeof (err as { syscall?: unknown }).syscall === 'string'
}

/** What a claim writes: a row of its key and number, and the counter's. */
const CLAIM_BYTES = 100

function sizeOf(entries: readonly (readonly [string, string])[]): number {
  let n = 0
  for (const [key, value] of entries) n += key.length + value.length
  return n
}
