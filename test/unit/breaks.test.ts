/** Where a request stops repeating the previous one: byte offsets over pieces, fields, tokens. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { cacheBreak, fieldBreak, fixedDigests, mismatch } from '../../src/pipeline/breaks.js'
import type { SpliceState } from '../../src/pipeline/splice.js'

const b = (text: string) => Buffer.from(text)

test('mismatch finds the first differing byte across pieces of any cut', () => {
  const long = 'x'.repeat(5000)
  assert.equal(mismatch([b('ab'), b('cd')], [b('abcd'), b('ef')]), undefined, 'goes on')
  assert.equal(mismatch([b('abcd')], [b('a'), b('bXd')]), 2)
  assert.equal(mismatch([b(long + 'a')], [b(long), b('b')]), 5000, 'past the halving')
  assert.equal(mismatch([b('abcd')], [b('ab')]), undefined, 'cut back: all of it cached')
  assert.equal(mismatch([], [b('a')]), undefined)
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
  const prefix = b('{"messages":[{"a":1},{"b":2}')
  const previous = {
    fixed: {},
    items: [b('{"a":1},{"b":2}')],
    sentBytes: 400,
    prefix,
    arrayStart: prefix.indexOf('['),
  } as unknown as SpliceState
  const items = [{ role: 'user' }, { role: 'tool' }, { role: 'user' }]
  const pruned = b('{"messages":[{"a":1},{"b":0},{"c":3}]}')
  const client = cacheBreak({
    previous,
    fixed: {},
    items,
    body: pruned,
    arrayStart: pruned.indexOf('['),
    upstream: [b('{"a":1},{"b":0},{"c":3}')],
    offsets: () => [0, 8, 16],
  })
  // Ten bytes of this request from the change on (of 23): billed again.
  assert.deepEqual(client, { item: 1, role: 'tool', by: 'client', tokens: 3 })
  const same = b('{"messages":[{"a":1},{"b":2},{"c":3}]}')
  const proxy = cacheBreak({
    previous,
    fixed: {},
    items,
    body: same,
    arrayStart: same.indexOf('['),
    upstream: [b('{"a":1},{"e":1},{"c":3}')],
    offsets: () => [0, 8, 16],
  })
  assert.equal(proxy?.by, 'proxy')
  assert.equal(proxy?.item, 1)
})
