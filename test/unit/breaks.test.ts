/** Where a request stops repeating the previous one: items by digest, fields, tokens. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { cacheBreak, fieldBreak, firstDifferent, fixedDigests } from '../../src/pipeline/breaks.js'
import type { SpliceState } from '../../src/pipeline/splice.js'

test('firstDifferent finds the first item that stops repeating the previous ones', () => {
  assert.equal(firstDifferent(['a', 'b'], ['a', 'b', 'c']), undefined, 'goes on')
  assert.equal(firstDifferent(['a', 'b', 'c'], ['a', 'x', 'c']), 1)
  assert.equal(firstDifferent(['a', 'b'], ['a']), undefined, 'cut back: all of it cached')
  assert.equal(firstDifferent([], ['a']), undefined)
})

test('fields a prompt cache keys on are digested without cache_control markers', () => {
  const a = fixedDigests({ tools: [{ name: 'Bash' }], system: [{ type: 'text', text: 's' }] })
  const moved = fixedDigests({
    tools: [{ name: 'Bash' }],
    system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }],
  })
  assert.deepEqual(a, moved)
  const other = fixedDigests({ tools: [{ name: 'Read' }], system: [{ type: 'text', text: 's' }] })
  assert.deepEqual(fieldBreak({ fixed: a, sentBytes: 4000 }, other), {
    field: 'tools',
    by: 'client',
    tokens: 1000,
  })
})

test('a pruned item is the client’s break; the same client bytes with other upstream bytes the proxy’s', () => {
  const previous = {
    fixed: {},
    sentBytes: 400,
    digests: { client: ['A', 'B'], upstream: ['a', 'b'] },
  } as unknown as SpliceState
  const items = [{ role: 'user' }, { role: 'tool' }, { role: 'user' }]
  const client = cacheBreak({
    previous,
    fixed: {},
    items,
    digests: { client: ['A', 'B2', 'C'], upstream: ['a', 'b2', 'c'] },
    sentBytes: 23,
    offsets: () => [0, 8, 16],
  })
  // 15 bytes of this request from the changed item on (of 23): billed again.
  assert.deepEqual(client, { item: 1, role: 'tool', by: 'client', tokens: 4 })
  const proxy = cacheBreak({
    previous,
    fixed: {},
    items,
    digests: { client: ['A', 'B', 'C'], upstream: ['a', 'e', 'c'] },
    sentBytes: 23,
    offsets: () => [0, 8, 16],
  })
  assert.equal(proxy?.by, 'proxy')
  assert.equal(proxy?.item, 1)
  const goesOn = cacheBreak({
    previous,
    fixed: {},
    items,
    digests: { client: ['A', 'B', 'C'], upstream: ['a', 'b', 'c'] },
    sentBytes: 23,
    offsets: () => [0, 8, 16],
  })
  assert.equal(goesOn, undefined, 'the same items and more: no break')
})
