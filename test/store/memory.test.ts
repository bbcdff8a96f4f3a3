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
})
