import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { statSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import { createStore } from '../../src/store/index.js'
import { openSqliteStore } from '../../src/store/sqlite.js'
import { assertClaims, prng, rejectsWith, storeContract } from './contract.js'

const idleTtlMs = 3_600_000
const run = promisify(execFile)
const child = fileURLToPath(new URL('./sqlite-child.ts', import.meta.url))

let root: string
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'lembas-sqlite-'))
  await chmod(root, 0o755) // the "other user" tests below must be able to enter it
})
after(async () => {
  await rm(root, { recursive: true, force: true })
})
const freshPath = (): string => join(root, randomUUID(), 'store.db')

/** Another connection to `file` holding its write lock, as another worker mid-commit would. */
function holdWriteLock(file: string): Database.Database {
  const holder = new Database(file)
  holder.exec('BEGIN IMMEDIATE')
  return holder
}

storeContract('sqlite', async () => {
  const file = freshPath()
  return { open: async () => openSqliteStore(file, { idleTtlMs }) }
})

storeContract('sqlite via createStore (cached)', async () => {
  const spec = `sqlite:${freshPath()}`
  return { open: () => createStore(spec, { idleTtlMs }) }
})

/** Runs sqlite-child.ts in another process, as user nobody when we are root (root ignores modes). */
async function inChild(...args: string[]): Promise<unknown> {
  const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
  const { stdout } = await run(process.execPath, ['--import', 'tsx', child, ...args], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    ...(args[0] === 'open' ? asNobody : {}),
  })
  return JSON.parse(stdout)
}

describe('sqlite store', () => {
  test('a reopened file has the data, with WAL, NORMAL sync, its own lock waits and schema version', async () => {
    const file = freshPath()
    const first = openSqliteStore(file, { idleTtlMs })
    assert.deepEqual(await first.putIfAbsent('s', [['k', 'v\u0000é']]), ['v\u0000é'])
    assert.deepEqual(await first.claimIds('s', ['a', 'b']), [1, 2])
    await first.close()

    const again = openSqliteStore(file, { idleTtlMs })
    assert.deepEqual(await again.get('s', ['k']), ['v\u0000é'])
    assert.deepEqual(await again.claimIds('s', ['c', 'a']), [3, 1])
    assert.equal(again.db.pragma('journal_mode', { simple: true }), 'wal')
    assert.equal(again.db.pragma('synchronous', { simple: true }), 1) // NORMAL
    // Waits for another connection's lock on timers (see the lock tests), not in SQLite.
    assert.equal(again.db.pragma('busy_timeout', { simple: true }), 0)
    assert.equal(again.db.pragma('user_version', { simple: true }), 1)
    await again.close()
  })

  test('createStore accepts a relative path and sqlite::memory:', async () => {
    const cwd = process.cwd()
    process.chdir(root)
    try {
      const rel = `${randomUUID()}/nested/store.db`
      const store = await createStore(`sqlite:${rel}`, { idleTtlMs })
      await store.putIfAbsent('s', [['k', 'v']])
      await store.close()
      const back = openSqliteStore(join(root, rel), { idleTtlMs })
      assert.deepEqual(await back.get('s', ['k']), ['v'])
      await back.close()
    } finally {
      process.chdir(cwd)
    }
    const mem = await createStore('sqlite::memory:', { idleTtlMs })
    assert.equal(mem.kind, 'sqlite')
    assert.deepEqual(await mem.claimIds('s', ['x']), [1])
    await mem.close()
  })

  test('idle scopes are deleted on open; touched ones stay', async () => {
    const file = freshPath()
    let now = 10_000_000
    const clock = { idleTtlMs: 10_000, now: () => now }
    const store = openSqliteStore(file, clock)
    await store.putIfAbsent('idle', [['k', 'v']])
    await store.claimIds('idle', ['a', 'b'])
    await store.putIfAbsent('busy', [['k', 'v']])
    await store.close()

    now += 6_000
    const mid = openSqliteStore(file, clock)
    assert.deepEqual(await mid.get('busy', ['k']), ['v']) // a read touches (it is > TTL/10 old)
    await mid.close()

    now += 6_000
    const late = openSqliteStore(file, clock)
    const count = (t: string): unknown =>
      late.db.prepare(`SELECT count(*) FROM ${t} WHERE scope = 'idle'`).pluck().get()
    assert.equal(count('kv'), 0)
    assert.equal(count('counters'), 0)
    assert.equal(count('scopes'), 0)
    assert.deepEqual(await late.get('busy', ['k']), ['v'])
    assert.deepEqual(await late.claimIds('idle', ['b']), [1], 'the counter restarts')

    // Expired but not swept yet: reads see nothing, a write starts the scope afresh.
    now += 11_000
    assert.deepEqual(await late.get('busy', ['k']), [undefined])
    assert.deepEqual(await late.putIfAbsent('busy', [['k', 'new']]), ['new'])
    await late.close()
  })

  test('a write rewrites the scope’s time only once it is a tenth of the TTL old', async () => {
    let now = 10_000_000
    const store = openSqliteStore(freshPath(), { idleTtlMs: 10_000, now: () => now })
    const touched = () =>
      store.db.prepare("SELECT touched_ms FROM scopes WHERE scope = 's'").pluck().get()
    await store.putIfAbsent('s', [['a', '1']])
    assert.equal(touched(), 10_000_000)
    now += 900
    await store.claimIds('s', ['x'])
    await store.putIfAbsent('s', [['b', '2']])
    assert.equal(touched(), 10_000_000, 'recent: left as it was (no page of the log for it)')
    now += 200
    await store.setLatest('s', 'k', 'v')
    assert.equal(touched(), 10_001_100, 'older than a tenth of the TTL: rewritten')
    now += 9_950
    assert.deepEqual(await store.get('s', ['a', 'b']), ['1', '2'], 'alive from the last rewrite')
    await store.close()
  })

  test('latest values live in the scope: one file of two handles, expiring with it', async () => {
    const file = freshPath()
    let now = 10_000_000
    const clock = { idleTtlMs: 10_000, now: () => now }
    const a = openSqliteStore(file, clock)
    const b = openSqliteStore(file, clock)
    await a.setLatest('idle', 'k', 'v')
    await a.setLatest('kept', 'k', 'v')
    await b.setLatest('kept', 'k', 'from b')
    assert.equal(await a.getLatest('kept', 'k'), 'from b')
    // Stored under the reserved prefix in kv, next to the write-once values.
    const stored = a.db
      .prepare(`SELECT key, value FROM kv WHERE scope = 'kept' ORDER BY key`)
      .all() as { key: string; value: string }[]
    assert.deepEqual(stored, [{ key: '\u0000latest:k', value: 'from b' }])
    assert.equal(a.db.pragma('user_version', { simple: true }), 1, 'no schema change')

    now += 6_000
    await b.setLatest('kept', 'other', 'x') // a write touches the scope
    now += 6_000
    assert.equal(await b.getLatest('idle', 'k'), undefined, 'expired, not swept yet')
    assert.equal(await a.getLatest('kept', 'k'), 'from b')
    a.sweep()
    const count = (scope: string): unknown =>
      a.db.prepare('SELECT count(*) FROM kv WHERE scope = ?').pluck().get(scope)
    assert.equal(count('idle'), 0, 'the sweep deleted the latest value')
    assert.equal(count('kept'), 2)

    // An expired scope that was not swept yet starts afresh on setLatest: nothing old survives.
    await a.setLatest('stale', 'old', 'v')
    now += 11_000
    await b.setLatest('stale', 'new', 'w')
    assert.equal(await a.getLatest('stale', 'old'), undefined)
    assert.equal(await a.getLatest('stale', 'new'), 'w')
    await a.close()
    await b.close()
  })

  test('a failed setLatest is store_unavailable and leaves the old value', async () => {
    const file = freshPath()
    const store = openSqliteStore(file, { idleTtlMs, busyTimeoutMs: 100 })
    await store.setLatest('s', 'k', 'old')
    const holder = holdWriteLock(file)
    await rejectsWith(store.setLatest('s', 'k', 'new'), 'store_unavailable')
    holder.exec('ROLLBACK')
    holder.close()
    assert.equal(await store.getLatest('s', 'k'), 'old')
    await store.close()
  })

  test('a file with a newer schema, or not a database, is store_unavailable', async () => {
    const newer = freshPath()
    await mkdir(join(newer, '..'), { recursive: true })
    const raw = new Database(newer)
    raw.pragma('user_version = 99')
    raw.close()
    assert.throws(() => openSqliteStore(newer, { idleTtlMs }), /schema version 99/)

    const garbage = freshPath()
    await mkdir(join(garbage, '..'), { recursive: true })
    await writeFile(
      garbage,
      'this is not a database, just some text that is long enough'.repeat(100),
    )
    await rejectsWith(createStore(`sqlite:${garbage}`, { idleTtlMs }), 'store_unavailable')
  })

  test('a path under a regular file is store_unavailable, naming the file', async () => {
    const blocker = join(root, `${randomUUID()}.file`)
    await writeFile(blocker, 'x')
    const file = join(blocker, 'store.db')
    await rejectsWith(createStore(`sqlite:${file}`, { idleTtlMs }), 'store_unavailable')
    assert.throws(
      () => openSqliteStore(file, { idleTtlMs }),
      (err: Error) => err.message.includes(file),
    )
  })

  test('a read-only file or an unwritable directory is store_unavailable at open', async () => {
    type Outcome = { ok: boolean; stage?: string; kind?: string; message?: string }
    const refused = async (file: string): Promise<void> => {
      const out = (await inChild('open', file)) as Outcome
      assert.deepEqual(
        [out.ok, out.stage, out.kind],
        [false, 'open', 'store_unavailable'],
        out.message,
      )
      assert.ok(out.message?.includes(file), out.message)
    }
    const dir = join(root, randomUUID())
    const file = join(dir, 'store.db')
    const store = openSqliteStore(file, { idleTtlMs })
    await store.putIfAbsent('s', [['k', 'v']])
    await store.close()
    await chmod(file, 0o444)
    await chmod(dir, 0o777)
    await refused(file) // read-only file, writable directory
    await chmod(dir, 0o555)
    await Promise.all([
      refused(file), // read-only file and directory
      refused(join(dir, 'new.db')), // cannot create the file
      refused(join(dir, 'a', 'b', 'new.db')), // cannot create the parent directories
    ])
    await chmod(dir, 0o755)
    // The same child, on a writable file, succeeds: the refusals above are not a broken child.
    const ok = join(root, randomUUID())
    await mkdir(ok, { mode: 0o777 })
    await chmod(ok, 0o777)
    assert.deepEqual(await inChild('open', join(ok, 'store.db')), { ok: true })
  })

  test('writes in one turn of the event loop commit together, each with its own answer', async () => {
    const file = freshPath()
    const store = openSqliteStore(file, { idleTtlMs })
    store.db.pragma('wal_checkpoint(TRUNCATE)')
    const before = statSync(file + '-wal').size
    const writes = Array.from({ length: 200 }, (_, i) =>
      i % 2 === 0
        ? store.putIfAbsent(`s${i % 10}`, [[`k${i}`, `v${i}`]])
        : store.claimIds('ids', [`c${i}`]),
    )
    const answers = await Promise.all(writes)
    const ids = answers.filter((_, i) => i % 2 === 1).map((a) => a[0])
    assert.deepEqual(
      ids,
      Array.from({ length: 100 }, (_, i) => i + 1),
      'claims in call order',
    )
    assert.deepEqual(answers[0], ['v0'])
    // One commit of 200 small writes adds a few pages to the log; 200 commits would add 200+.
    const pages = (statSync(file + '-wal').size - before) / 4096
    assert.ok(pages < 40, `the log grew by ${pages.toFixed(1)} pages`)
    const other = new Database(file, { readonly: true })
    assert.equal(
      (other.prepare('SELECT count(*) AS n FROM kv').get() as { n: number }).n,
      200,
      'all visible to another connection',
    )
    other.close()
    await store.close()
  })

  test('a full disk fails the whole batch, and the store keeps working', async () => {
    const store = openSqliteStore(freshPath(), { idleTtlMs })
    await store.putIfAbsent('s', [['before', 'x']])
    const pages = store.db.pragma('page_count', { simple: true }) as number
    store.db.pragma(`max_page_count = ${pages + 20}`) // ~80 KiB more, then SQLITE_FULL
    await assert.rejects(
      store.putIfAbsent('s', [
        ['small', 'y'],
        ['huge', 'z'.repeat(1_000_000)],
      ]),
      (err: Error & { kind?: string }) =>
        err.kind === 'store_unavailable' && /SQLITE_FULL/.test(err.message),
    )
    assert.deepEqual(await store.get('s', ['small', 'huge', 'before']), [undefined, undefined, 'x'])
    assert.deepEqual(await store.putIfAbsent('s', [['small', 'y']]), ['y'])
    await store.close()
  })

  test('a write lock held too long is store_unavailable (SQLITE_BUSY), and nothing is written', async () => {
    const file = freshPath()
    const store = openSqliteStore(file, { idleTtlMs, busyTimeoutMs: 200 })
    const holder = holdWriteLock(file)
    const t0 = performance.now()
    await assert.rejects(
      store.claimIds('s', ['a']),
      (err: Error & { kind?: string }) =>
        err.kind === 'store_unavailable' && /SQLITE_BUSY/.test(err.message),
    )
    assert.ok(performance.now() - t0 >= 150, 'waited for the busy timeout')
    holder.exec('ROLLBACK')
    holder.close()
    assert.deepEqual(await store.claimIds('s', ['b', 'a']), [1, 2])
    await store.close()
  })

  test("a write waits for another connection's lock on timers: the process goes on meanwhile", async () => {
    const file = freshPath()
    const waits: [number, boolean][] = []
    const store = openSqliteStore(file, {
      idleTtlMs,
      onLockWait: (ms, ok) => waits.push([ms, ok]),
    })
    await store.putIfAbsent('s', [['before', 'x']])
    const holder = holdWriteLock(file)
    const t0 = performance.now()
    let settledAt: number | undefined
    const write = store.putIfAbsent('s', [['k', 'v']]).finally(() => {
      settledAt = performance.now()
    })
    // SQLite's busy handler would hold this very thread: no timer, no read, until the lock went.
    const tick = await new Promise<number>((resolve) =>
      setTimeout(() => resolve(performance.now()), 20),
    )
    assert.equal(settledAt, undefined, 'the write still waits')
    assert.ok(tick - t0 < 80, `a timer ran while it waited (${(tick - t0).toFixed(0)} ms)`)
    assert.deepEqual(await store.get('s', ['before']), ['x'], 'a read goes on meanwhile (WAL)')
    await sleep(60)
    holder.exec('COMMIT')
    assert.deepEqual(await write, ['v'])
    assert.ok(settledAt! - t0 >= 70, 'it got the lock once released')
    assert.equal(waits.length, 1, 'one wait reported')
    assert.equal(waits[0]![1], true)
    assert.ok(waits[0]![0] >= 70, `its time: ${waits[0]![0]}`)
    // Writes that came while it waited went in the same commit; nothing waits now.
    assert.deepEqual(await store.putIfAbsent('s', [['after', 'y']]), ['y'])
    assert.equal(waits.length, 1)
    holder.close()
    await store.close()
  })

  test('writes that come while one waits for the lock commit with it, in order', async () => {
    const file = freshPath()
    const store = openSqliteStore(file, { idleTtlMs })
    const holder = holdWriteLock(file)
    const first = store.claimIds('s', ['a', 'b'])
    await sleep(15)
    const second = store.claimIds('s', ['c'])
    const latest = store.setLatest('s', 'head', 'c')
    await sleep(15)
    holder.exec('ROLLBACK')
    assert.deepEqual(await first, [1, 2])
    assert.deepEqual(await second, [3])
    await latest
    assert.equal(await store.getLatest('s', 'head'), 'c')
    holder.close()
    await store.close()
  })

  test('a store closing while writes wait for the lock writes them before it closes', async () => {
    const file = freshPath()
    const store = openSqliteStore(file, { idleTtlMs })
    const holder = holdWriteLock(file)
    const write = store.putIfAbsent('s', [['k', 'v']])
    await sleep(30)
    holder.exec('ROLLBACK')
    // Before the next try's timer: close takes the waiting writes itself.
    await store.close()
    assert.deepEqual(await write, ['v'])
    assert.equal(holder.prepare("SELECT value FROM kv WHERE key = 'k'").pluck().get(), 'v')
    holder.close()
  })

  test('two other processes and this one claim on one file: no duplicates, 1..N', async () => {
    const file = freshPath()
    const scope = `procs/${randomUUID()}`
    const store = openSqliteStore(file, { idleTtlMs }) // creates the file before the children race
    const startMs = Date.now() + 1200 // children need time to boot tsx
    const children = [1, 2].map((seed) =>
      inChild('claim', file, scope, String(seed), '300', String(startMs)),
    )
    const random = prng(3)
    const calls: string[][] = []
    const results: number[][] = []
    while (Date.now() < startMs) await sleep(5)
    for (let i = 0; i < 300; i++) {
      const keys = Array.from({ length: 10 }, () => `key-${Math.floor(random() * 300)}`)
      calls.push(keys)
      results.push(await store.claimIds(scope, keys))
      await new Promise((r) => setImmediate(r))
    }
    for (const out of (await Promise.all(children)) as {
      calls: string[][]
      results: number[][]
    }[]) {
      calls.push(...out.calls)
      results.push(...out.results)
    }
    const byKey = assertClaims(calls, results)
    assert.ok(byKey.size > 250, `only ${byKey.size} distinct keys`)
    await store.close()
  })
})

describe('checkpoints: when writes pause, or once the log holds enough', () => {
  // In WAL mode a commit goes to the log; the database file grows only when a checkpoint copies
  // the log into it. SQLite's own checkpoint would run inside the commit past 1000 pages (4 MB).
  const value = 'v'.repeat(100 * 1024)
  const write = async (store: ReturnType<typeof openSqliteStore>, n: number, from = 0) => {
    for (let i = from; i < from + n; i++) await store.putIfAbsent('s', [[`k${i}`, value]])
  }

  test('what is written without a pause stays in the log; a pause copies it once it is a quarter of checkpointBytes', async () => {
    const file = freshPath()
    const store = openSqliteStore(file, {
      idleTtlMs,
      checkpointIdleMs: 300,
      checkpointBytes: 16 * 1024 * 1024,
    })
    const pause = () => sleep(600)
    try {
      const empty = statSync(file).size
      await write(store, 10)
      await pause()
      assert.ok(
        statSync(file).size < empty + 1024 * 1024,
        `1 MB is too little to copy: ${statSync(file).size} bytes`,
      )
      await write(store, 50, 10)
      assert.ok(
        statSync(file).size < empty + 1024 * 1024,
        `nothing copied while writing: ${statSync(file).size} bytes`,
      )
      await pause()
      assert.ok(statSync(file).size > 5_000_000, `copied after the pause: ${statSync(file).size}`)
    } finally {
      await store.close()
    }
  })

  test('checkpointBytes 0 leaves it to SQLite: copied inside the commits, no pause needed', async () => {
    const file = freshPath()
    const store = openSqliteStore(file, { idleTtlMs, checkpointIdleMs: 60_000, checkpointBytes: 0 })
    try {
      await write(store, 60)
      assert.ok(statSync(file).size > 3_000_000, `SQLite's own copied: ${statSync(file).size}`)
    } finally {
      await store.close()
    }
  })

  test('past checkpointBytes the log is copied at once, pause or not', async () => {
    const file = freshPath()
    const store = openSqliteStore(file, {
      idleTtlMs,
      checkpointIdleMs: 60_000,
      checkpointBytes: 1024 * 1024,
    })
    try {
      await write(store, 30)
      assert.ok(statSync(file).size > 2_000_000, `copied without a pause: ${statSync(file).size}`)
      assert.deepEqual(await store.get('s', ['k0', 'k29']), [value, value])
    } finally {
      await store.close()
    }
  })
})
