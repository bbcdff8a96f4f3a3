import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { cachedStore } from '../../src/store/cached.js'
import { memoryState, memoryStore } from '../../src/store/memory.js'
import { storeContract } from './contract.js'

const idleTtlMs = 3_600_000

storeContract('memory', async () => {
  const state = memoryState()
  return { open: async () => memoryStore({ idleTtlMs, state }) }
})

storeContract('memory, cached', async () => {
  const state = memoryState()
  return { open: async () => cachedStore(memoryStore({ idleTtlMs, state })) }
})

describe('memory store idle TTL', () => {
  test('a scope untouched for longer than the TTL is gone; a touched one stays', async () => {
    let now = 1_000_000
    const store = memoryStore({ idleTtlMs: 1000, now: () => now })
    await store.putIfAbsent('idle', [['k', 'v']])
    await store.claimIds('idle', ['a'])
    await store.putIfAbsent('busy', [['k', 'v']])
    now += 600
    assert.deepEqual(await store.get('busy', ['k']), ['v']) // reading touches
    now += 600
    assert.deepEqual(await store.get('idle', ['k']), [undefined])
    assert.deepEqual(await store.claimIds('idle', ['b']), [1], 'the counter restarts too')
    assert.deepEqual(await store.get('busy', ['k']), ['v'])
    await store.close()
  })

  test('latest values expire with their scope; setLatest and getLatest keep it alive', async () => {
    let now = 1_000_000
    const store = memoryStore({ idleTtlMs: 1000, now: () => now })
    await store.setLatest('idle', 'k', 'v')
    await store.putIfAbsent('idle', [['k', 'once']])
    await store.setLatest('written', 'k', 'v')
    await store.putIfAbsent('written', [['k', 'once']])
    await store.setLatest('read', 'k', 'v')
    now += 600
    await store.setLatest('written', 'other', 'x') // a write touches the whole scope
    assert.equal(await store.getLatest('read', 'k'), 'v') // so does a read
    now += 600
    assert.equal(await store.getLatest('idle', 'k'), undefined)
    assert.deepEqual(await store.get('idle', ['k']), [undefined])
    assert.equal(await store.getLatest('written', 'k'), 'v')
    assert.deepEqual(await store.get('written', ['k']), ['once'])
    assert.equal(await store.getLatest('read', 'k'), 'v')
    now += 1001
    assert.equal(await store.getLatest('read', 'k'), undefined)
    await store.setLatest('read', 'k', 'afresh')
    assert.equal(await store.getLatest('read', 'k'), 'afresh')
    await store.close()
  })
})
