/**
 * The Store contract, run against every backend. `makeBackend` sets up one backend (a temp file, a
 * Redis, a shared memory state); `open()` gives a new instance on it (a new handle or connection),
 * which is how the tests play "two replicas". Every test uses its own scopes, so a shared Redis
 * is fine.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { LembasError } from '../../src/errors.js'
import type { Store } from '../../src/store/store.js'

export interface Backend {
  open(): Promise<Store>
  dispose?(): Promise<void>
}

export async function rejectsWith(p: Promise<unknown>, kind: LembasError['kind']): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof LembasError, `expected a LembasError, got ${String(err)}`)
    assert.equal(err.kind, kind, err.message)
    return true
  })
}

/** A deterministic PRNG (mulberry32), so a failing interleaving can be replayed. */
export function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Checks that claims agree per key and that the numbers are exactly 1..N. */
export function assertClaims(calls: readonly (readonly string[])[], results: readonly number[][]) {
  const byKey = new Map<string, number>()
  calls.forEach((keys, c) => {
    keys.forEach((k, i) => {
      const n = results[c]![i]!
      const seen = byKey.get(k)
      if (seen === undefined) byKey.set(k, n)
      else assert.equal(n, seen, `key ${k} got two numbers: ${seen} and ${n}`)
    })
  })
  const numbers = [...byKey.values()].sort((a, b) => a - b)
  assert.deepEqual(
    numbers,
    numbers.map((_, i) => i + 1),
    'numbers must be unique and contiguous from 1',
  )
  return byKey
}

/** ~size characters of text that UTF-8 and UTF-16 code differently, with NULs and escapes. */
export function awkwardText(size: number): string {
  const piece = 'héllo wörld 日本語 🚀🧪 \u0000 \r\n\t"\\\' e\u0301 \u200d\uFEFF\u{10FFFF} <x/>'
  return piece.repeat(Math.ceil(size / piece.length))
}

const same = (a: string | undefined, b: string, what: string): void =>
  assert.ok(a === b, `${what}: got ${a === undefined ? 'undefined' : `${a.length} chars`}, differs`)

export function storeContract(name: string, makeBackend: () => Promise<Backend>): void {
  describe(`Store contract: ${name}`, () => {
    let backend: Backend
    let store: Store
    let other: Store
    const opened: Store[] = []
    const open = async (): Promise<Store> => {
      const s = await backend.open()
      opened.push(s)
      return s
    }
    const scope = (): string => `contract/${randomUUID()}`

    before(async () => {
      backend = await makeBackend()
      store = await open()
      other = await open()
    })
    after(async () => {
      for (const s of opened) await s.close()
      await backend?.dispose?.()
    })

    test('get of missing keys gives undefined for each, in order', async () => {
      const s = scope()
      assert.deepEqual(await store.get(s, ['a', 'b', 'a']), [undefined, undefined, undefined])
      assert.deepEqual(await store.get(s, []), [])
    })

    test('empty batches give empty answers', async () => {
      const s = scope()
      assert.deepEqual(await store.putIfAbsent(s, []), [])
      assert.deepEqual(await store.claimIds(s, []), [])
    })

    test('putIfAbsent: the first writer wins within one batch', async () => {
      const s = scope()
      const won = await store.putIfAbsent(s, [
        ['k', 'first'],
        ['k', 'second'],
        ['j', 'other'],
      ])
      assert.deepEqual(won, ['first', 'first', 'other'])
      assert.deepEqual(await store.get(s, ['k', 'j']), ['first', 'other'])
    })

    test('putIfAbsent: the first writer wins across batches and instances', async () => {
      const s = scope()
      assert.deepEqual(await store.putIfAbsent(s, [['k', 'first']]), ['first'])
      assert.deepEqual(
        await store.putIfAbsent(s, [
          ['k', 'late'],
          ['n', 'new'],
        ]),
        ['first', 'new'],
      )
      assert.deepEqual(await other.putIfAbsent(s, [['k', 'later']]), ['first'])
      assert.deepEqual(await other.get(s, ['k', 'n', 'missing']), ['first', 'new', undefined])
    })

    test('values of several MB with unicode, NUL and empty strings round-trip exactly', async () => {
      const s = scope()
      const big = awkwardText(3_000_000)
      const entries: [string, string][] = [
        ['ключ 🔑', big],
        ['nul\u0000key', 'a\u0000b\u0000'],
        ['', ''],
        ['plain', 'x'.repeat(5_000_000)],
      ]
      const won = await store.putIfAbsent(s, entries)
      entries.forEach(([k, v], i) => same(won[i], v, `putIfAbsent ${JSON.stringify(k)}`))
      // A fresh instance has nothing cached: this reads the backend.
      const fresh = await open()
      const got = await fresh.get(
        s,
        entries.map(([k]) => k),
      )
      entries.forEach(([k, v], i) => same(got[i], v, `get ${JSON.stringify(k)}`))
      assert.deepEqual(await fresh.get(s, ['nul']), [undefined], 'a NUL does not cut the key')
    })

    test('caller keys never collide with the stored claims', async () => {
      const s = scope()
      await store.putIfAbsent(s, [
        ['\u0000claim:x', 'looks like a claim'],
        ['\u0000next', 'looks like the counter'],
        ['\u0000', 'just a NUL'],
      ])
      assert.deepEqual(await store.claimIds(s, ['x', 'y']), [1, 2])
      assert.deepEqual(await other.get(s, ['\u0000claim:x', '\u0000next', '\u0000', 'x']), [
        'looks like a claim',
        'looks like the counter',
        'just a NUL',
        undefined,
      ])
      assert.deepEqual(await other.claimIds(s, ['\u0000claim:x', 'x']), [3, 1])
    })

    test('scopes are isolated', async () => {
      const base = scope()
      const scopes = [base, `${base}/x`, `${base}}`, `{${base}`, `${base}\u0000`]
      for (const [i, s] of scopes.entries()) {
        assert.deepEqual(await store.putIfAbsent(s, [['k', `v${i}`]]), [`v${i}`])
        assert.deepEqual(await store.claimIds(s, [`only-${i}`, 'k']), [1, 2])
      }
      for (const [i, s] of scopes.entries()) {
        assert.deepEqual(await other.get(s, ['k']), [`v${i}`])
        assert.deepEqual(await other.claimIds(s, ['k', `only-${i}`]), [2, 1])
      }
    })

    test('claimIds numbers from 1 in order, and a claimed key keeps its number', async () => {
      const s = scope()
      assert.deepEqual(await store.claimIds(s, ['a', 'b', 'c']), [1, 2, 3])
      assert.deepEqual(await store.claimIds(s, ['c', 'a']), [3, 1])
      assert.deepEqual(await store.claimIds(s, ['d', 'a', 'e', 'd']), [4, 1, 5, 4])
      assert.deepEqual(await other.claimIds(s, ['e', 'f', 'b']), [5, 6, 2])
      assert.deepEqual(await other.claimIds(s, ['a', 'b', 'c', 'd', 'e', 'f']), [1, 2, 3, 4, 5, 6])
      // Claims are not values.
      assert.deepEqual(await store.get(s, ['a']), [undefined])
    })

    test('50 concurrent claimIds from two instances: one number per key, 1..N', async () => {
      const s = scope()
      const random = prng(42)
      const pool = Array.from({ length: 80 }, (_, i) => `tool-call-${i}`)
      const calls = Array.from({ length: 50 }, () =>
        Array.from({ length: 12 }, () => pool[Math.floor(random() * pool.length)]!),
      )
      const results = await Promise.all(
        calls.map((keys, i) => (i % 2 === 0 ? store : other).claimIds(s, keys)),
      )
      const byKey = assertClaims(calls, results)
      const fresh = await open()
      const keys = [...byKey.keys()]
      assert.deepEqual(
        await fresh.claimIds(s, keys),
        keys.map((k) => byKey.get(k)),
      )
    })

    test('claimThenPut writes only when the claim gives the numbers expected', async () => {
      const s = scope()
      const written = await store.claimThenPut(
        s,
        ['a', 'b'],
        [1, 2],
        [
          ['ra', 'A'],
          ['rb', 'B'],
        ],
      )
      assert.deepEqual(written, { ids: [1, 2], winners: ['A', 'B'] })
      assert.deepEqual(await other.get(s, ['ra', 'rb']), ['A', 'B'])
      // Run twice (a resend after a lost reply): the same ids, the same winners.
      assert.deepEqual(
        await other.claimThenPut(
          s,
          ['a', 'b'],
          [1, 2],
          [
            ['ra', 'A'],
            ['rb', 'B'],
          ],
        ),
        { ids: [1, 2], winners: ['A', 'B'] },
      )
      // Numbers guessed wrong: the claim stands, nothing of the entries is written.
      const missed = await store.claimThenPut(s, ['c'], [2], [['rc', 'C at 2']])
      assert.deepEqual(missed.ids, [3])
      assert.equal(missed.winners, undefined)
      assert.deepEqual(await other.get(s, ['rc']), [undefined])
      assert.deepEqual(await other.claimIds(s, ['c', 'd']), [3, 4], 'the claim and counter stand')
      // Fewer numbers than keys never match.
      const short = await other.claimThenPut(s, ['e', 'f'], [5], [['re', 'E']])
      assert.deepEqual(short, { ids: [5, 6] })
      assert.deepEqual(await store.get(s, ['re']), [undefined])
      // No keys: a plain put, first writer wins.
      assert.deepEqual(
        await store.claimThenPut(
          s,
          [],
          [],
          [
            ['ra', 'other'],
            ['rg', 'G'],
          ],
        ),
        {
          ids: [],
          winners: ['A', 'G'],
        },
      )
      const refused = store.claimThenPut(s, ['h'], [7], [['rh', 'bad \ud800']])
      await rejectsWith(refused, 'invalid_request')
      assert.deepEqual(await store.claimIds(s, ['h']), [7], 'a refused batch claims nothing')
    })

    test('claimThenPut: a counter behind the numbers expected (the scope lost) goes on from them', async () => {
      // A process that gave #1-#5 and still sends them, on a store that lost the scope: the next
      // result is #6, never a second #1.
      const s = scope()
      assert.deepEqual(await store.claimThenPut(s, ['f'], [6], [['rf', 'F at 6']]), {
        ids: [6],
        winners: ['F at 6'],
      })
      assert.deepEqual(await other.claimIds(s, ['f', 'g']), [6, 7])
      // A key claimed before keeps its number whatever is expected.
      assert.deepEqual(await other.claimThenPut(s, ['g'], [9], [['rg', 'G']]), { ids: [7] })
      assert.deepEqual(await store.claimIds(s, ['h']), [8])
    })

    test('claimThenPut: twins guessing the same numbers, one writes', async () => {
      const s = scope()
      await store.claimIds(s, ['before'])
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? store : other).claimThenPut(
            s,
            [`k${i}`, `l${i}`],
            [2, 3],
            [[`r${i}`, `rendered as 2 and 3 by ${i}`]],
          ),
        ),
      )
      const winners = results.filter((r) => r.winners)
      assert.equal(winners.length, 1, 'exactly one claim got 2 and 3')
      assertClaims(
        [['before'], ...results.map((_, i) => [`k${i}`, `l${i}`])],
        [[1], ...results.map((r) => r.ids)],
      )
      const stored = await (
        await open()
      ).get(
        s,
        results.map((_, i) => `r${i}`),
      )
      results.forEach((r, i) =>
        assert.equal(stored[i], r.winners ? `rendered as 2 and 3 by ${i}` : undefined),
      )
    })

    test('concurrent putIfAbsent from two instances: everyone reads the same winner', async () => {
      const s = scope()
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 === 0 ? store : other).putIfAbsent(s, [
            ['shared', `writer-${i}`],
            [`own-${i}`, `mine-${i}`],
          ]),
        ),
      )
      const winner = results[0]![0]!
      assert.match(winner, /^writer-\d+$/)
      results.forEach((r, i) => assert.deepEqual(r, [winner, `mine-${i}`]))
      assert.deepEqual(await (await open()).get(s, ['shared']), [winner])
    })

    test('unpaired surrogates are refused, not corrupted', async () => {
      const s = scope()
      await rejectsWith(store.putIfAbsent(s, [['k', 'bad \ud800 value']]), 'invalid_request')
      await rejectsWith(store.putIfAbsent(s, [['\udc00', 'v']]), 'invalid_request')
      await rejectsWith(store.claimIds(s, ['ok', '\ud83d']), 'invalid_request')
      assert.deepEqual(await store.get(s, ['k']), [undefined])
      assert.deepEqual(await store.claimIds(s, ['ok']), [1], 'a refused batch claims nothing')
    })

    test('getLatest of an unset key gives undefined, also next to write-once values', async () => {
      const s = scope()
      assert.equal(await store.getLatest(s, 'k'), undefined)
      await store.putIfAbsent(s, [['k', 'write-once']])
      await store.claimIds(s, ['k'])
      assert.equal(await store.getLatest(s, 'k'), undefined)
      assert.equal(await other.getLatest(s, 'k'), undefined)
    })

    test('setLatest: the last write wins; writing the same value again is harmless', async () => {
      const s = scope()
      assert.equal(await store.setLatest(s, 'k', 'one'), undefined)
      assert.equal(await store.getLatest(s, 'k'), 'one')
      await store.setLatest(s, 'k', 'two')
      assert.equal(await store.getLatest(s, 'k'), 'two')
      await store.setLatest(s, 'k', 'two') // a resend
      assert.equal(await store.getLatest(s, 'k'), 'two')
      await store.setLatest(s, 'k', '') // empty is a value, not a deletion
      assert.equal(await store.getLatest(s, 'k'), '')
      await store.setLatest(s, 'k', 'three')
      await store.setLatest(s, 'j', 'other key')
      assert.equal(await store.getLatest(s, 'k'), 'three')
      assert.equal(await store.getLatest(s, 'j'), 'other key')
    })

    test('latest values and write-once values of the same key are separate, both ways', async () => {
      const s = scope()
      await store.setLatest(s, 'k', 'latest')
      assert.deepEqual(await store.get(s, ['k']), [undefined], 'get does not see a latest value')
      assert.deepEqual(await store.putIfAbsent(s, [['k', 'write-once']]), ['write-once'])
      assert.equal(await store.getLatest(s, 'k'), 'latest', 'putIfAbsent left it alone')
      await store.setLatest(s, 'k', 'newer')
      assert.deepEqual(await store.get(s, ['k']), ['write-once'], 'setLatest left it alone')
      assert.deepEqual(await store.putIfAbsent(s, [['k', 'late']]), ['write-once'])
      assert.deepEqual(await store.claimIds(s, ['k']), [1])
      // Read by another instance too, so that no cache answers.
      assert.equal(await other.getLatest(s, 'k'), 'newer')
      assert.deepEqual(await other.get(s, ['k']), ['write-once'])

      // Caller keys that look like the reserved names stay in their own namespace.
      await store.putIfAbsent(s, [
        ['\u0000latest:x', 'looks like a latest value'],
        ['\u0000claim:y', 'looks like a claim'],
      ])
      assert.equal(await other.getLatest(s, 'x'), undefined)
      await store.setLatest(s, 'x', 'real latest')
      await store.setLatest(s, '\u0000claim:y', 'latest that looks like a claim')
      await store.setLatest(s, '\u0000next', 'latest that looks like the counter')
      assert.deepEqual(await other.claimIds(s, ['y', 'z']), [2, 3], 'the counter is untouched')
      assert.deepEqual(await other.get(s, ['\u0000latest:x', '\u0000claim:y', 'x', 'y']), [
        'looks like a latest value',
        'looks like a claim',
        undefined,
        undefined,
      ])
      assert.equal(await other.getLatest(s, 'x'), 'real latest')
      assert.equal(await other.getLatest(s, '\u0000latest:x'), undefined)
      assert.equal(await other.getLatest(s, '\u0000claim:y'), 'latest that looks like a claim')
      assert.equal(await other.getLatest(s, '\u0000next'), 'latest that looks like the counter')
      assert.equal(await other.getLatest(s, 'y'), undefined, 'claims are not latest values')
    })

    test('latest values are isolated between scopes', async () => {
      const base = scope()
      const scopes = [base, `${base}/x`, `${base}}`, `{${base}`, `${base}\u0000`]
      for (const [i, s] of scopes.entries()) await store.setLatest(s, 'k', `v${i}`)
      for (const [i, s] of scopes.entries()) {
        assert.equal(await other.getLatest(s, 'k'), `v${i}`)
      }
      await store.setLatest(scopes[1]!, 'k', 'changed')
      assert.equal(await other.getLatest(scopes[0]!, 'k'), 'v0')
      assert.equal(await other.getLatest(scopes[1]!, 'k'), 'changed')
      assert.equal(await other.getLatest(`${base}/`, 'k'), undefined)
    })

    test('latest values of several MB with unicode, NUL and empty strings round-trip', async () => {
      const s = scope()
      const big = awkwardText(3_000_000)
      const entries: [string, string][] = [
        ['ключ 🔑', big],
        ['nul\u0000key', 'a\u0000b\u0000'],
        ['', ''],
        ['\u0000', 'a NUL key'],
        ['plain', 'x'.repeat(5_000_000)],
      ]
      for (const [k, v] of entries) await store.setLatest(s, k, v)
      const fresh = await open()
      for (const [k, v] of entries) {
        same(await fresh.getLatest(s, k), v, `getLatest ${JSON.stringify(k)}`)
      }
      assert.equal(await fresh.getLatest(s, 'nul'), undefined, 'a NUL does not cut the key')
      // A big value replaced by a small one, and back.
      await fresh.setLatest(s, 'plain', 'small')
      assert.equal(await store.getLatest(s, 'plain'), 'small')
      await store.setLatest(s, 'plain', big)
      same(await fresh.getLatest(s, 'plain'), big, 'getLatest after growing again')
    })

    test('two instances see each other’s latest value; nothing stale is served', async () => {
      const s = scope()
      await store.setLatest(s, 'k', 'from store')
      assert.equal(await other.getLatest(s, 'k'), 'from store')
      assert.equal(await store.getLatest(s, 'k'), 'from store')
      await other.setLatest(s, 'k', 'from other')
      assert.equal(
        await store.getLatest(s, 'k'),
        'from other',
        'store must not serve its own old value',
      )
      assert.equal(await other.getLatest(s, 'k'), 'from other')
      for (let i = 0; i < 5; i++) {
        const [writer, reader] = i % 2 === 0 ? [store, other] : [other, store]
        await writer.setLatest(s, 'k', `round ${i}`)
        assert.equal(await reader.getLatest(s, 'k'), `round ${i}`)
        assert.equal(await writer.getLatest(s, 'k'), `round ${i}`)
      }
    })

    test('concurrent setLatest from two instances: all read back the same, one of the written', async () => {
      const s = scope()
      const written = Array.from({ length: 40 }, (_, i) => `writer-${i}`)
      await Promise.all(written.map((v, i) => (i % 2 === 0 ? store : other).setLatest(s, 'k', v)))
      const seen = await Promise.all([store.getLatest(s, 'k'), other.getLatest(s, 'k')])
      assert.ok(written.includes(seen[0]!), `got ${seen[0]}`)
      assert.deepEqual(seen, [seen[0], seen[0]])
      assert.equal(await (await open()).getLatest(s, 'k'), seen[0])
    })

    test('unpaired surrogates are refused by setLatest and getLatest', async () => {
      const s = scope()
      await rejectsWith(store.setLatest(s, 'k', 'bad \ud800 value'), 'invalid_request')
      await rejectsWith(store.setLatest(s, '\udc00', 'v'), 'invalid_request')
      await rejectsWith(store.setLatest('\ud83d', 'k', 'v'), 'invalid_request')
      await rejectsWith(store.getLatest(s, '\udc00'), 'invalid_request')
      await rejectsWith(store.getLatest('\ud83d', 'k'), 'invalid_request')
      assert.equal(await store.getLatest(s, 'k'), undefined, 'a refused write wrote nothing')
    })

    test('ping resolves', async () => {
      await store.ping()
      await other.ping()
    })

    test('after close, every operation rejects with store_unavailable', async () => {
      const s = scope()
      const doomed = await open()
      await doomed.putIfAbsent(s, [['k', 'v']])
      await doomed.setLatest(s, 'latest', 'v')
      await doomed.close()
      await doomed.close() // twice is fine
      await rejectsWith(doomed.get(s, ['k']), 'store_unavailable')
      await rejectsWith(doomed.putIfAbsent(s, [['k', 'v']]), 'store_unavailable')
      await rejectsWith(doomed.claimIds(s, ['k']), 'store_unavailable')
      await rejectsWith(doomed.setLatest(s, 'k', 'v'), 'store_unavailable')
      await rejectsWith(doomed.getLatest(s, 'k'), 'store_unavailable')
      await rejectsWith(doomed.ping(), 'store_unavailable')
      // The other instances are unaffected.
      assert.deepEqual(await store.get(s, ['k']), ['v'])
      assert.equal(await store.getLatest(s, 'latest'), 'v')
    })
  })
}
