/** The caches' LRU: order by use, weights summed, eviction oldest first and never the kept key. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Lru } from '../../src/lru.js'
import { Memo } from '../../src/memo.js'

/** The keys held, least recently used first: the order eviction takes them in (empties `lru`). */
function evictionOrder(lru: Lru<number>, keys: readonly string[]): string[] {
  const dropped: string[] = []
  let held = keys.filter((key) => lru.peek(key) !== undefined)
  while (lru.size > 0) {
    lru.evictTo(lru.weight - 1)
    dropped.push(...held.filter((key) => lru.peek(key) === undefined))
    held = held.filter((key) => lru.peek(key) !== undefined)
  }
  return dropped
}

test('get moves an entry to the newest place; peek leaves it; set replaces in place of the newest', () => {
  const lru = new Lru<number>()
  for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) lru.set(key, i, 10)
  assert.equal(lru.get('a'), 0)
  assert.equal(lru.peek('b'), 1)
  lru.set('c', 30, 5)
  assert.deepEqual([...lru.values()], [1, 3, 0, 30], 'values, least recently used first')
  assert.equal(lru.size, 4)
  assert.equal(lru.weight, 35, 'the replaced weight is taken off')
  assert.deepEqual(evictionOrder(lru, ['a', 'b', 'c', 'd']), ['b', 'd', 'a', 'c'])
  assert.equal(lru.weight, 0)
})

test('evictTo drops the least recently used until the weights fit, never the key kept', () => {
  const lru = new Lru<number>()
  lru.set('old', 1, 100)
  lru.set('mid', 2, 100)
  lru.set('new', 3, 100)
  lru.evictTo(150, 'old')
  assert.equal(lru.peek('old'), 1, 'kept although the oldest')
  assert.equal(lru.peek('mid'), undefined)
  assert.equal(lru.peek('new'), undefined, 'still over: the next oldest went too')
  assert.equal(lru.weight, 100)
  assert.equal(lru.delete('old'), true)
  assert.equal(lru.delete('old'), false)
  assert.equal(lru.size, 0)
  lru.set('again', 4, 1)
  assert.equal(lru.get('again'), 4, 'usable after being emptied')
  lru.clear()
  assert.deepEqual([lru.size, lru.weight, [...lru.values()]], [0, 0, []])
  lru.set('after', 5, 2)
  assert.deepEqual([...lru.values()], [5], 'usable after clear')
})

test('many entries used and evicted in turn: the order stays exact', () => {
  const lru = new Lru<number>()
  const model: string[] = [] // oldest first
  for (let i = 0; i < 5000; i++) {
    const key = `k${i % 700}`
    if (i % 3 === 0 && lru.get(key) !== undefined) {
      model.splice(model.indexOf(key), 1)
      model.push(key)
      continue
    }
    if (lru.peek(key) !== undefined) model.splice(model.indexOf(key), 1)
    lru.set(key, i, 1)
    model.push(key)
    lru.evictTo(300)
    model.splice(0, Math.max(0, model.length - 300))
  }
  assert.equal(lru.size, model.length)
  assert.deepEqual(evictionOrder(lru, model), model)
})

test('a memo keeps its most recently used entries, at most its budget; 0 keeps none', () => {
  const memo = new Memo<string>(2)
  memo.set('a', 'A')
  memo.set('b', 'B')
  assert.equal(memo.get('a'), 'A', 'a used: b is now the oldest')
  memo.set('c', 'C')
  assert.deepEqual(
    ['a', 'b', 'c'].map((key) => memo.get(key)),
    ['A', undefined, 'C'],
  )
  assert.equal(memo.size.entries, 2)
  assert.ok(memo.size.bytes! > 0, 'weighed for /metrics')
  const none = new Memo<string>(0)
  none.set('a', 'A')
  assert.deepEqual([none.get('a'), none.size.entries], [undefined, 0])
})
