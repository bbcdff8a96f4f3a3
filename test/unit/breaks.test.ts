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

test('a batch’s break bills what it sends again up to the newest turn, not the text it took out', () => {
  const previous = {
    fixed: {},
    sentBytes: 4000,
    digests: { client: ['A', 'B', 'C'], upstream: ['a', 'b', 'c'] },
  } as unknown as SpliceState
  const items = [{ role: 'user' }, { role: 'tool' }, { role: 'assistant' }, { role: 'tool' }]
  // The batch took item 1 (4000 bytes before) down to a stand-in: item 2 (the newest turn)
  // now begins at byte 140, and the request ends at 4100.
  const broken = (batchEnd?: number) =>
    cacheBreak({
      previous,
      fixed: {},
      items,
      digests: { client: ['A', 'B', 'C', 'D'], upstream: ['a', 'e', 'c', 'd'] },
      sentBytes: 4100,
      offsets: () => [0, 100, 140, 200],
      ...(batchEnd === undefined ? {} : { batchEnd }),
    })
  assert.deepEqual(broken(140), { item: 1, role: 'tool', by: 'proxy', tokens: 10 })
  assert.equal(broken()?.tokens, 975, 'without it: all the previous request had from there')
})
