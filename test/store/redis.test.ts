import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { Redis } from 'ioredis'
import { LembasError } from '../../src/errors.js'
import { createStore } from '../../src/store/index.js'
import { redactUrl } from '../../src/store/common.js'
import { openRedisStore, scopeKey, type RedisStoreOptions } from '../../src/store/redis.js'
import type { Store } from '../../src/store/store.js'
import { startRedis, type TestRedis } from '../helpers/redis-server.js'
import { rejectsWith, storeContract } from './contract.js'

const idleTtlMs = 3_600_000

storeContract('redis', async () => {
  const server = await startRedis()
  return { open: () => openRedisStore(server.url, { idleTtlMs }), dispose: () => server.stop() }
})

storeContract('redis via createStore (cached)', async () => {
  const server = await startRedis()
  return { open: () => createStore(server.url, { idleTtlMs }), dispose: () => server.stop() }
})

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Resolves once `store` answers again; fails the test after `timeoutMs`. */
async function until(store: Store, timeoutMs: number): Promise<number> {
  const t0 = Date.now()
  for (;;) {
    try {
      await store.ping()
      return Date.now() - t0
    } catch (err) {
      if (Date.now() - t0 > timeoutMs) throw err
      await sleep(50)
    }
  }
}

describe('redis store', () => {
  let server: TestRedis
  let raw: Redis
  // Closed in after(), so that a failed assertion cannot leave a connection holding the process.
  const opened: Store[] = []
  const open = async (options: RedisStoreOptions): Promise<Store> => {
    const store = await openRedisStore(server.url, options)
    opened.push(store)
    return store
  }
  before(async () => {
    server = await startRedis()
    raw = new Redis(server.url)
  })
  after(async () => {
    for (const store of opened) await store.close()
    raw?.disconnect()
    await server?.stop()
  })

  test('one hash per scope under lembas:v1:{scope}, with the idle TTL on every write and read', async () => {
    const store = await open({ idleTtlMs: 60_000 })
    const fresh = async (ttl: number): Promise<void> =>
      assert.ok(ttl > 50_000 && ttl <= 60_000, `pttl ${ttl}`)
    const put = `t/${randomUUID()}`
    await store.putIfAbsent(put, [['k', 'v']])
    assert.equal(scopeKey(put), `lembas:v1:{${put}}`)
    assert.equal(await raw.type(scopeKey(put)), 'hash')
    assert.equal(await raw.hget(scopeKey(put), 'k'), 'v')
    await fresh(await raw.pttl(scopeKey(put)))

    const claim = `t/${randomUUID()}`
    await store.claimIds(claim, ['a'])
    await fresh(await raw.pttl(scopeKey(claim)))

    await raw.pexpire(scopeKey(put), 5_000)
    await store.get(put, ['k'])
    await fresh(await raw.pttl(scopeKey(put))) // a read refreshes it too
    await store.close()
  })

  test('latest values: a reserved field of the scope hash, with the idle TTL on set and get', async () => {
    const store = await open({ idleTtlMs: 60_000 })
    const fresh = async (ttl: number): Promise<void> =>
      assert.ok(ttl > 50_000 && ttl <= 60_000, `pttl ${ttl}`)
    const scope = `t/${randomUUID()}`
    await store.setLatest(scope, 'k', 'v')
    assert.deepEqual(await raw.hgetall(scopeKey(scope)), { '\u0000latest:k': 'v' })
    await fresh(await raw.pttl(scopeKey(scope)))
    await raw.pexpire(scopeKey(scope), 5_000)
    assert.equal(await store.getLatest(scope, 'k'), 'v')
    await fresh(await raw.pttl(scopeKey(scope))) // a read refreshes it
    await raw.pexpire(scopeKey(scope), 5_000)
    await store.setLatest(scope, 'k', 'w')
    await fresh(await raw.pttl(scopeKey(scope))) // an overwrite too
    // Resent, as ioredis does after a reconnect: the same state as once.
    await store.setLatest(scope, 'k', 'w')
    assert.deepEqual(await raw.hgetall(scopeKey(scope)), { '\u0000latest:k': 'w' })
  })

  test('an expired scope loses its latest values with everything else', async () => {
    const store = await open({ idleTtlMs: 600 })
    const scope = `t/${randomUUID()}`
    await store.putIfAbsent(scope, [['k', 'once']])
    await store.setLatest(scope, 'k', 'latest')
    await sleep(300)
    await store.setLatest(scope, 'j', 'keeps it alive')
    await sleep(400) // past the first write's TTL
    assert.equal(await store.getLatest(scope, 'k'), 'latest', 'setLatest refreshed the TTL')
    await sleep(900)
    assert.equal(await raw.exists(scopeKey(scope)), 0)
    assert.equal(await store.getLatest(scope, 'k'), undefined)
    assert.equal(await store.getLatest(scope, 'j'), undefined)
    assert.deepEqual(await store.get(scope, ['k']), [undefined])
  })

  test('a resent write changes nothing (the scripts are idempotent)', async () => {
    // ioredis resends unanswered commands after a reconnect; run each script twice to be sure.
    const scope = `t/${randomUUID()}`
    const a = await open({ idleTtlMs })
    assert.deepEqual(await a.claimIds(scope, ['x', 'y']), [1, 2])
    assert.deepEqual(await a.claimIds(scope, ['x', 'y']), [1, 2])
    assert.deepEqual(await a.claimIds(scope, ['z']), [3])
    assert.deepEqual(await a.putIfAbsent(scope, [['k', 'one']]), ['one'])
    assert.deepEqual(await a.putIfAbsent(scope, [['k', 'one']]), ['one'])
    assert.equal(await raw.hlen(scopeKey(scope)), 5) // k, 3 claims, the counter
    await a.close()
  })

  test('an unreachable Redis fails createStore fast, without showing the password', async () => {
    const url = 'redis://alice:s3cret-pw@127.0.0.1:1/0'
    const t0 = Date.now()
    await assert.rejects(createStore(url, { idleTtlMs }), (err: unknown) => {
      assert.ok(err instanceof LembasError)
      assert.equal(err.kind, 'store_unavailable')
      assert.ok(!err.message.includes('s3cret'), err.message)
      assert.ok(err.message.includes('redis://alice:***@127.0.0.1:1'), err.message)
      return true
    })
    assert.ok(Date.now() - t0 < 2000, `took ${Date.now() - t0} ms`)
    assert.equal(redactUrl('rediss://:pw@host:6380'), 'rediss://:***@host:6380')
    assert.equal(redactUrl('redis://host:6379'), 'redis://host:6379')
  })

  test('a wrong password fails createStore with store_unavailable, without showing it', async () => {
    const own = await startRedis({ spawn: true })
    const admin = new Redis(own.url)
    try {
      await admin.config('SET', 'requirepass', 'right-pw')
      const port = new URL(own.url).port
      await assert.rejects(
        createStore(`redis://default:wrong-pw@127.0.0.1:${port}`, { idleTtlMs }),
        (err: unknown) => {
          assert.ok(err instanceof LembasError && err.kind === 'store_unavailable', String(err))
          assert.ok(!err.message.includes('wrong-pw'), err.message)
          assert.ok(err.message.includes('redis://default:***@'), err.message)
          return true
        },
      )
      const good = await createStore(`redis://:right-pw@127.0.0.1:${port}`, { idleTtlMs })
      opened.push(good)
      assert.deepEqual(await good.claimIds('s', ['a']), [1])
    } finally {
      admin.disconnect()
      await own.stop()
    }
  })
})

describe('redis outage', () => {
  test('killed: calls fail fast; restarted: the same instance works, with the data intact', async () => {
    const server = await startRedis({ spawn: true })
    const store = await createStore(server.url, { idleTtlMs, cacheBytes: 0 })
    const scope = `outage/${randomUUID()}`
    try {
      assert.deepEqual(await store.claimIds(scope, ['a', 'b', 'c']), [1, 2, 3])
      const big = 'ü'.repeat(1_000_000)
      await store.putIfAbsent(scope, [
        ['k', 'before'],
        ['big', big],
      ])
      await store.setLatest(scope, 'latest', 'before')

      server.kill()
      for (const call of [
        () => store.get(scope, ['k']),
        () => store.putIfAbsent(scope, [['k2', 'during']]),
        () => store.claimIds(scope, ['d']),
        () => store.setLatest(scope, 'latest', 'during'),
        () => store.getLatest(scope, 'latest'),
        () => store.ping(),
      ]) {
        const t0 = performance.now()
        await rejectsWith(call(), 'store_unavailable')
        const ms = performance.now() - t0
        assert.ok(ms < 2000, `rejected after ${ms.toFixed(0)} ms`)
      }

      await server.restart()
      const recovery = await until(store, 10_000)
      assert.ok(recovery < 5000, `reconnected after ${recovery} ms`)
      const [k, b, k2] = await store.get(scope, ['k', 'big', 'k2'])
      assert.equal(k, 'before', 'AOF kept the data')
      assert.ok(b === big, 'the 1 MB value came back intact')
      assert.equal(k2, undefined, 'a write refused during the outage is not there')
      assert.equal(await store.getLatest(scope, 'latest'), 'before', 'and no latest value either')
      await store.setLatest(scope, 'latest', 'after')
      assert.equal(await store.getLatest(scope, 'latest'), 'after')
      assert.deepEqual(await store.claimIds(scope, ['c', 'd', 'a']), [3, 4, 1])
      assert.deepEqual(await store.claimIds(scope, ['d', 'e']), [4, 5])
    } finally {
      await store.close()
      await server.stop()
    }
  })

  test('a hung Redis fails calls after the command timeout; dying, at once', async () => {
    const server = await startRedis({ spawn: true })
    const store = await openRedisStore(server.url, { idleTtlMs, commandTimeoutMs: 400 })
    const patient = await openRedisStore(server.url, { idleTtlMs, commandTimeoutMs: 10_000 })
    // A script that never ends holds the server: calls are sent but get no reply.
    const raw = new Redis(server.url, { retryStrategy: () => null, disconnectTimeout: 100 })
    raw.on('error', () => {})
    try {
      raw.eval('while true do end', 0).catch(() => {})
      await sleep(100)
      let t0 = performance.now()
      await assert.rejects(store.claimIds(`t/${randomUUID()}`, ['a']), (err: LembasError) => {
        assert.equal(err.kind, 'store_unavailable')
        assert.match(err.message, /timed out/)
        return true
      })
      let ms = performance.now() - t0
      assert.ok(ms >= 350 && ms < 1000, `timed out after ${ms.toFixed(0)} ms`)

      t0 = performance.now()
      // Far below its own timeout: ioredis gives up on a dead server after two reconnects.
      const inFlight = patient.putIfAbsent(`t/${randomUUID()}`, [['k', 'v']])
      await sleep(100)
      server.kill()
      await rejectsWith(inFlight, 'store_unavailable')
      ms = performance.now() - t0
      assert.ok(ms < 2000, `settled after ${ms.toFixed(0)} ms`)
    } finally {
      raw.disconnect()
      await store.close()
      await patient.close()
      await server.stop()
    }
  })
})
