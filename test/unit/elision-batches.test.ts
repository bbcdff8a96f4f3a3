/**
 * `--elide`'s batches as the store keeps them: numbered from 1, first writer wins, read back in
 * runs (a long session makes hundreds; the full path reads them all before it rebuilds).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { NO_ELISION, readElision, withBatch, writeBatch } from '../../src/session/elision.js'
import { createStore, type Store } from '../../src/store/index.js'

const DAY = 86_400_000

/** The store, counting its reads. */
function counted(store: Store): { store: Store; reads: () => number } {
  let reads = 0
  const wrapped: Store = Object.create(store) as Store
  wrapped.get = (scope, keys) => {
    reads++
    return store.get(scope, keys)
  }
  return { store: wrapped, reads: () => reads }
}

test('hundreds of batches come back whole, in order, in a few reads; a later one stays pending', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-elision-'))
  const store = await createStore('sqlite:' + join(dir, 'store.db'), { idleTtlMs: DAY })
  try {
    let elision = NO_ELISION
    const count = 130
    for (let n = 1; n <= count; n++) {
      // The last batch was decided on a longer request (items 500): a rewind goes without it.
      const batch = { at: n === count ? 500 : n, texts: { [`key${n}`]: `[#${n}] Elided.` } }
      const won = await writeBatch('s', store, elision, batch)
      assert.deepEqual(won, batch)
      elision = withBatch(elision, won, 400)
    }
    // A second writer of batch 1 loses to the first.
    assert.equal((await writeBatch('s', store, NO_ELISION, { at: 9, texts: {} })).at, 1)

    const { store: watched, reads } = counted(store)
    const read = await readElision('s', watched, 400)
    assert.equal(read.batches, count)
    assert.deepEqual(read.pending, [500])
    assert.equal(read.texts.size, count - 1)
    assert.equal(read.texts.get('key129'), '[#129] Elided.')
    assert.deepEqual([...read.texts], [...elision.texts])
    assert.equal(reads(), 3, '64 batches a read, up to the first missing number')
    assert.equal((await readElision('other', store, 400)).batches, 0)
  } finally {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
