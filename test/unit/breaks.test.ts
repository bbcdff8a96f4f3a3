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
  /** This request (23 upstream bytes, three items) with these client and upstream digests. */
  const against = (client: string[], upstream: string[]) =>
    cacheBreak({
      previous,
      fixed: {},
      items,
      digests: { client, upstream },
      sentBytes: 23,
      offsets: () => [0, 8, 16],
    })
  const client = against(['A', 'B2', 'C'], ['a', 'b2', 'c'])
  // 15 bytes of this request from the changed item on (of 23): billed again.
  assert.deepEqual(client, { item: 1, role: 'tool', by: 'client', tokens: 4 })
  const proxy = against(['A', 'B', 'C'], ['a', 'e', 'c'])
  assert.equal(proxy?.by, 'proxy')
  assert.equal(proxy?.item, 1)
  const goesOn = against(['A', 'B', 'C'], ['a', 'b', 'c'])
  assert.equal(goesOn, undefined, 'the same items and more: no break')
})
