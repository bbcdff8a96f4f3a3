import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { LembasError } from '../../src/errors.js'
import { createStore, defaultSqlitePath } from '../../src/store/index.js'
import { rejectsWith } from './contract.js'

describe('createStore', () => {
  test('memory: opens a cached memory store', async () => {
    const store = await createStore('memory:', { idleTtlMs: 1000 })
    assert.equal(store.kind, 'memory')
    assert.deepEqual(await store.claimIds('s', ['a']), [1])
    await store.close()
  })

  test('claimThenPut of a batch larger than a chunk claims alone; the caller writes in chunks', async () => {
    const store = await createStore('memory:', { idleTtlMs: 60_000 })
    const entries = Array.from({ length: 1500 }, (_, i) => [`r${i}`, `v${i}`] as const)
    const large = await store.claimThenPut('s', ['a', 'b'], [1, 2], entries)
    assert.deepEqual(large, { ids: [1, 2] })
    assert.deepEqual(await store.get('s', ['r0', 'r1499']), [undefined, undefined])
    const won = await store.putIfAbsent('s', entries)
    assert.deepEqual([won[0], won[1499]], ['v0', 'v1499'])
    const small = await store.claimThenPut('s', ['c'], [3], entries.slice(0, 10))
    assert.deepEqual(small.ids, [3])
    assert.equal(small.winners?.length, 10)
    await store.close()
  })

  test('anything else is config_invalid, listing the accepted forms', async () => {
    for (const spec of [
      '',
      'sqlite:',
      'memory',
      'postgres://db',
      'redis:/host',
      'redis://',
      'store.db',
    ]) {
      await assert.rejects(createStore(spec, { idleTtlMs: 1000 }), (err: unknown) => {
        assert.ok(err instanceof LembasError, String(err))
        assert.equal(err.kind, 'config_invalid')
        for (const form of ['sqlite:PATH', 'sqlite::memory:', 'redis://', 'rediss://', 'memory:']) {
          assert.ok(err.message.includes(form), `${spec}: ${err.message}`)
        }
        return true
      })
    }
  })

  test('a bad spec is reported without its password', async () => {
    await assert.rejects(
      createStore('redis:/u:hunter2@host', { idleTtlMs: 1000 }),
      (err: Error) => {
        assert.ok(!err.message.includes('hunter2'), err.message)
        return true
      },
    )
    await assert.rejects(
      createStore('mysql://u:hunter2@host/db', { idleTtlMs: 1000 }),
      (err: Error) => {
        assert.ok(!err.message.includes('hunter2'), err.message)
        return true
      },
    )
  })

  test('the idle TTL must be a positive integer', async () => {
    for (const idleTtlMs of [0, -1, 1.5, Number.NaN, Infinity]) {
      await rejectsWith(createStore('memory:', { idleTtlMs }), 'config_invalid')
    }
  })
})

describe('defaultSqlitePath', () => {
  test('uses XDG_STATE_HOME when it is absolute, else ~/.local/state', () => {
    assert.equal(
      defaultSqlitePath({ XDG_STATE_HOME: '/var/state' }, '/home/u'),
      '/var/state/lembas-proxy/store.db',
    )
    assert.equal(defaultSqlitePath({}, '/home/u'), '/home/u/.local/state/lembas-proxy/store.db')
    assert.equal(
      defaultSqlitePath({ XDG_STATE_HOME: '' }, '/home/u'),
      '/home/u/.local/state/lembas-proxy/store.db',
    )
    assert.equal(
      defaultSqlitePath({ XDG_STATE_HOME: 'relative' }, '/home/u'),
      '/home/u/.local/state/lembas-proxy/store.db',
    )
  })
})
