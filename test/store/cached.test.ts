import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { cachedStore } from '../../src/store/cached.js'
import { memoryStore } from '../../src/store/memory.js'
import type { Store } from '../../src/store/store.js'
import { rejectsWith } from './contract.js'

type Call = [
  op: 'get' | 'putIfAbsent' | 'claimIds' | 'claimThenPut' | 'setLatest' | 'getLatest',
  scope: string,
  keys: string[],
]

/** A real memory store that records every call reaching it. */
function counting(): { store: Store; calls: Call[] } {
  const inner = memoryStore({ idleTtlMs: 3_600_000 })
  const calls: Call[] = []
  const store: Store = {
    kind: inner.kind,
    get: (scope, keys) => (calls.push(['get', scope, [...keys]]), inner.get(scope, keys)),
    putIfAbsent: (scope, entries) => (
      calls.push(['putIfAbsent', scope, entries.map(([k]) => k)]),
      inner.putIfAbsent(scope, entries)
    ),
    claimIds: (scope, keys) => (
      calls.push(['claimIds', scope, [...keys]]),
      inner.claimIds(scope, keys)
    ),
    claimThenPut: (scope, keys, expected, entries) => (
      calls.push(['claimThenPut', scope, [...keys, ...entries.map(([k]) => k)]]),
      inner.claimThenPut(scope, keys, expected, entries)
    ),
    setLatest: (scope, key, value) => (
      calls.push(['setLatest', scope, [key]]),
      inner.setLatest(scope, key, value)
    ),
    getLatest: (scope, key) => (
      calls.push(['getLatest', scope, [key]]),
      inner.getLatest(scope, key)
    ),
    ping: () => inner.ping(),
    close: () => inner.close(),
  }
  return { store, calls }
}

describe('cachedStore', () => {
  test('get asks the backend once, only for keys not cached, deduplicated', async () => {
    const { store, calls } = counting()
    await store.putIfAbsent('s', [
      ['a', 'A'],
      ['b', 'B'],
      ['c', 'C'],
    ])
    calls.length = 0
    const cached = cachedStore(store)
    assert.deepEqual(await cached.get('s', ['a', 'b', 'a']), ['A', 'B', 'A'])
    assert.deepEqual(calls, [['get', 's', ['a', 'b']]])
    assert.deepEqual(await cached.get('s', ['b', 'c', 'a', 'c']), ['B', 'C', 'A', 'C'])
    assert.deepEqual(calls.slice(1), [['get', 's', ['c']]])
    assert.deepEqual(await cached.get('s', ['a', 'b', 'c']), ['A', 'B', 'C'])
    assert.equal(calls.length, 2, 'all cached: no backend call')
  })

  test('misses are not cached', async () => {
    const { store, calls } = counting()
    const cached = cachedStore(store)
    assert.deepEqual(await cached.get('s', ['k']), [undefined])
    await store.putIfAbsent('s', [['k', 'late']]) // another replica writes it
    assert.deepEqual(await cached.get('s', ['k']), ['late'])
    assert.equal(calls.filter(([op]) => op === 'get').length, 2)
  })

  test('scopes do not share cache entries', async () => {
    const { store } = counting()
    const cached = cachedStore(store)
    await cached.putIfAbsent('ab', [['c', 'in ab']])
    await cached.putIfAbsent('a', [['bc', 'in a']])
    assert.deepEqual(await cached.get('a', ['bc', 'c']), ['in a', undefined])
    assert.deepEqual(await cached.get('ab', ['c', 'bc']), ['in ab', undefined])
  })

  test('putIfAbsent caches the winner and skips keys already known', async () => {
    const { store, calls } = counting()
    await store.putIfAbsent('s', [['k', 'first']])
    const cached = cachedStore(store)
    assert.deepEqual(
      await cached.putIfAbsent('s', [
        ['k', 'second'],
        ['n', 'N'],
      ]),
      ['first', 'N'],
    )
    calls.length = 0
    assert.deepEqual(await cached.get('s', ['k', 'n']), ['first', 'N'])
    assert.deepEqual(
      await cached.putIfAbsent('s', [
        ['k', 'x'],
        ['m', 'M'],
        ['n', 'y'],
      ]),
      ['first', 'M', 'N'],
    )
    assert.deepEqual(calls, [['putIfAbsent', 's', ['m']]])
  })

  test('of the values written, long ones are not kept: a later read asks the backend', async () => {
    const { store, calls } = counting()
    const cached = cachedStore(store)
    const long = 'x'.repeat(5000)
    await cached.putIfAbsent('s', [
      ['short', 'S'],
      ['long', long],
    ])
    calls.length = 0
    assert.deepEqual(await cached.get('s', ['short', 'long']), ['S', long])
    assert.deepEqual(calls, [['get', 's', ['long']]], 'only the long one is read')
    assert.deepEqual(await cached.get('s', ['long']), [long])
    assert.equal(calls.length, 1, 'once read, it is kept')
  })

  test('claimIds caches numbers; new keys keep their order', async () => {
    const { store, calls } = counting()
    const cached = cachedStore(store)
    assert.deepEqual(await cached.claimIds('s', ['a', 'b']), [1, 2])
    assert.deepEqual(await cached.claimIds('s', ['c', 'a', 'd', 'b', 'c']), [3, 1, 4, 2, 3])
    assert.deepEqual(await cached.claimIds('s', ['d', 'c', 'b', 'a']), [4, 3, 2, 1])
    assert.deepEqual(calls, [
      ['claimIds', 's', ['a', 'b']],
      ['claimIds', 's', ['c', 'd', 'c']],
    ])
    // Claims and values are separate in the cache as in the store.
    assert.deepEqual(await cached.get('s', ['a']), [undefined])
  })

  test('claimThenPut: one backend call, values known skipped; a known claim is a claim alone', async () => {
    const { store, calls } = counting()
    const cached = cachedStore(store)
    await cached.putIfAbsent('s', [['file', 'F']])
    calls.length = 0
    const written = await cached.claimThenPut(
      's',
      ['a'],
      [1],
      [
        ['ra', 'A'],
        ['file', 'F2'],
      ],
    )
    assert.deepEqual(written, { ids: [1], winners: ['A', 'F'] })
    assert.deepEqual(calls, [['claimThenPut', 's', ['a', 'ra']]])
    // What it wrote and claimed is cached: neither is asked again.
    assert.deepEqual(await cached.get('s', ['ra']), ['A'])
    assert.deepEqual(await cached.claimIds('s', ['a']), [1])
    assert.equal(calls.length, 1)
    // A key claimed before (a retried request) may keep an older number: claimed, not written.
    assert.deepEqual(await cached.claimThenPut('s', ['a', 'b'], [2, 3], [['rb', 'B']]), {
      ids: [1, 2],
    })
    assert.deepEqual(calls.slice(1), [['claimIds', 's', ['b']]])
    assert.deepEqual(await store.get('s', ['rb']), [undefined])
    // Numbers guessed wrong (another process took 2): the claims are cached all the same.
    assert.deepEqual(await cached.claimThenPut('s', ['c'], [2], [['rc', 'C']]), { ids: [3] })
    assert.deepEqual(await cached.claimIds('s', ['c']), [3])
    assert.deepEqual(calls.at(-1), ['claimThenPut', 's', ['c', 'rc']])
  })

  test('the byte bound evicts the least recently used entries', async () => {
    const { store, calls } = counting()
    const value = 'x'.repeat(1000) // ~2 KiB each in the estimate
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`)
    await store.putIfAbsent(
      's',
      keys.map((k) => [k, value]),
    )
    const cached = cachedStore(store, { maxBytes: 8 * 2200 }) // room for about 8
    await cached.get('s', keys)
    calls.length = 0
    await cached.get('s', ['k9', 'k8'])
    assert.deepEqual(calls, [], 'the newest are cached')
    await cached.get('s', ['k0', 'k1'])
    assert.deepEqual(calls, [['get', 's', ['k0', 'k1']]], 'the oldest were evicted')
    calls.length = 0
    await cached.get('s', ['k9'])
    assert.deepEqual(calls, [], 'a recently used entry survives new inserts')
  })

  test('a value too big for the cache is not cached; maxBytes 0 disables it', async () => {
    const { store, calls } = counting()
    await store.putIfAbsent('s', [['big', 'x'.repeat(100_000)]])
    const cached = cachedStore(store, { maxBytes: 200_000 })
    await cached.get('s', ['big'])
    await cached.get('s', ['big'])
    assert.equal(calls.filter(([op]) => op === 'get').length, 2)
    const off = cachedStore(store, { maxBytes: 0 })
    await off.claimIds('s', ['a'])
    await off.claimIds('s', ['a'])
    assert.equal(calls.filter(([op]) => op === 'claimIds').length, 2)
  })

  test('an entry older than maxAgeMs is asked again', async () => {
    const { store, calls } = counting()
    let now = 0
    const cached = cachedStore(store, { maxAgeMs: 1000, now: () => now })
    await cached.putIfAbsent('s', [['k', 'v']])
    await cached.claimIds('s', ['a'])
    now = 1000
    await cached.get('s', ['k'])
    await cached.claimIds('s', ['a'])
    assert.equal(calls.length, 2, 'still fresh at exactly maxAgeMs')
    now = 1001
    assert.deepEqual(await cached.get('s', ['k']), ['v'])
    assert.deepEqual(await cached.claimIds('s', ['a']), [1])
    assert.deepEqual(calls.slice(2), [
      ['get', 's', ['k']],
      ['claimIds', 's', ['a']],
    ])
  })

  test('latest values are never cached: every call reaches the backend', async () => {
    const { store, calls } = counting()
    const cached = cachedStore(store)
    assert.equal(await cached.getLatest('s', 'k'), undefined)
    await cached.setLatest('s', 'k', 'one')
    assert.equal(await cached.getLatest('s', 'k'), 'one')
    assert.equal(await cached.getLatest('s', 'k'), 'one')
    await store.setLatest('s', 'k', 'two') // another replica overwrites it
    assert.equal(await cached.getLatest('s', 'k'), 'two')
    assert.deepEqual(calls, [
      ['getLatest', 's', ['k']],
      ['setLatest', 's', ['k']],
      ['getLatest', 's', ['k']],
      ['getLatest', 's', ['k']],
      ['setLatest', 's', ['k']],
      ['getLatest', 's', ['k']],
    ])
  })

  test('a cached write-once value and a latest value of one key do not mix', async () => {
    const { store } = counting()
    const cached = cachedStore(store)
    await cached.putIfAbsent('s', [['k', 'once']])
    assert.deepEqual(await cached.get('s', ['k']), ['once']) // cached now
    assert.equal(await cached.getLatest('s', 'k'), undefined)
    await cached.setLatest('s', 'k', 'latest')
    assert.deepEqual(await cached.get('s', ['k']), ['once'])
    assert.equal(await cached.getLatest('s', 'k'), 'latest')
    // A latest value read through the cache does not become a write-once answer either.
    await cached.setLatest('s', 'j', 'latest j')
    assert.equal(await cached.getLatest('s', 'j'), 'latest j')
    assert.deepEqual(await cached.get('s', ['j']), [undefined])
    assert.deepEqual(await cached.putIfAbsent('s', [['j', 'once j']]), ['once j'])
  })

  test('after close, cached entries are not served', async () => {
    const { store } = counting()
    const cached = cachedStore(store)
    await cached.putIfAbsent('s', [['k', 'v']])
    await cached.close()
    await rejectsWith(cached.get('s', ['k']), 'store_unavailable')
    await rejectsWith(cached.claimIds('s', []), 'store_unavailable')
    await rejectsWith(cached.setLatest('s', 'k', 'v'), 'store_unavailable')
    await rejectsWith(cached.getLatest('s', 'k'), 'store_unavailable')
  })
})
