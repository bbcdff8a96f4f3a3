/** The fast path's memory counts what it holds, dedupe tables included, and stays in budget. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DedupeTable } from '../../src/context/index.js'
import { SpliceCache, type SpliceState } from '../../src/pipeline/splice.js'

function state(scope: string, hashes: number): SpliceState {
  const table = new DedupeTable()
  const lineHashes = Array.from({ length: hashes }, (_, i) => `h${i}`)
  table.add({ kind: 'read', id: '#0001', absPath: '/a', start: 1, end: hashes, lineHashes })
  return {
    scope,
    prefix: Buffer.from('{"messages":['),
    items: [Buffer.from('{}')],
    history: { table },
  } as unknown as SpliceState
}

test('a remembered state weighs its dedupe table; past the budget the least recent goes', () => {
  const cache = new SpliceCache(1_000_000)
  cache.remember('a', state('s/a', 10_000))
  assert.ok(cache.bytes > 10_000 * 32, `the line hashes count: ${cache.bytes}`)
  cache.remember('b', state('s/b', 10_000))
  cache.remember('c', state('s/c', 20_000))
  assert.ok(cache.bytes <= 1_000_000, `within budget: ${cache.bytes}`)
  assert.equal(cache.states('a').length, 0, 'the least recent went')
  assert.equal(cache.states('c').length, 1)
})
