/** Known upstream bytes kept as spans of the client's request plus the bytes the proxy changed. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  commonHead,
  commonTail,
  KeptBuilder,
  keptWeight,
  resolveKept,
} from '../../src/pipeline/kept.js'

/** A client array and, per element, the upstream text the proxy sends for it. */
function kept(client: string[], upstream: string[], separator = ',') {
  const body = Buffer.from('{"messages":[' + client.join(separator) + ']}')
  const builder = new KeptBuilder(body)
  let at = '{"messages":['.length
  client.forEach((element, k) => {
    builder.item(upstream[k]!, at, at + Buffer.byteLength(element))
    at += Buffer.byteLength(element) + Buffer.byteLength(separator)
  })
  return { body, builder }
}

test('resolved against the same body, kept pieces are the upstream bytes exactly', () => {
  const result = '{"role":"tool","content":"' + 'line\\n'.repeat(2000) + '"}'
  const bracketed = result.replace('"content":"', '"content":"[#0001] ')
  const cases: [string[], string[], string][] = [
    [['{"a":1}', '{"b":2}'], ['{"a":1}', '{"b":2}'], ','],
    [['{"a":1}', result, '{"c":"é"}'], ['{"a":1}', bracketed, '{"c":"é"}'], ','],
    [['{"a": 1}', '{"b": 2}'], ['{"a":1}', '{"b":2}'], ', '],
    [['{"a":1}', '{"gone":1}', '{"c":3}'], ['{"a":1}', '', '{"c":3}'], ','],
    [['{"x":"abcabc"}'], ['{"x":"abc"}'], ','],
  ]
  for (const [client, upstream, separator] of cases) {
    const { body, builder } = kept(client, upstream, separator)
    const expected = upstream.filter((text) => text !== '').join(',')
    const bytes = Buffer.concat(resolveKept(builder.pieces, body))
    assert.equal(bytes.toString(), expected, JSON.stringify(client))
    assert.equal(builder.bytes, Buffer.byteLength(expected), 'the byte count')
  }
})

test('an untouched run is one span; a bracketed result keeps only the bracket', () => {
  const result = '{"role":"tool","content":"' + 'x'.repeat(100_000) + '"}'
  const bracketed = result.replace('"content":"', '"content":"[#0001] ')
  const { builder } = kept(['{"a":1}', '{"b":2}', result], ['{"a":1}', '{"b":2}', bracketed])
  const own = builder.pieces.filter((piece) => Buffer.isBuffer(piece)) as Buffer[]
  assert.deepEqual(
    own.map((piece) => piece.toString()),
    ['[#0001] '],
    'only the bracket is held',
  )
  assert.equal(builder.pieces.length, 3, 'span, bracket, span')
  assert.ok(keptWeight(builder.pieces) < 500, `weight ${keptWeight(builder.pieces)}`)
})

test('the shared start and end are found across block boundaries', () => {
  for (const n of [0, 1, 63, 64, 65, 1000, 5000]) {
    const a = Buffer.from('x'.repeat(n) + 'A' + 'y'.repeat(n))
    const b = Buffer.from('x'.repeat(n) + 'BB' + 'y'.repeat(n))
    assert.equal(commonHead(a, b), n, `head ${n}`)
    assert.equal(commonTail(a, b, a.length - n), n, `tail ${n}`)
  }
  const same = Buffer.from('abc')
  assert.equal(commonHead(same, Buffer.from('abc')), 3, 'equal')
  assert.equal(commonTail(Buffer.from('aaa'), Buffer.from('aa'), 0), 0, 'bounded by max')
})
