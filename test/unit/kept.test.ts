/** Known upstream bytes kept as spans of the client's request plus the bytes the proxy changed. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { commonHead, commonTail, KeptBuilder, resolveKept } from '../../src/pipeline/kept.js'

/** A client array and, per element, the upstream text the proxy sends for it. */
function kept(client: string[], upstream: string[], separator = ',') {
  const body = Buffer.from('{"messages":[' + client.join(separator) + ']}')
  const builder = new KeptBuilder(body)
  let at = '{"messages":['.length
  client.forEach((element, k) => {
    builder.item(Buffer.from(upstream[k]!), at, at + Buffer.byteLength(element))
    at += Buffer.byteLength(element) + Buffer.byteLength(separator)
  })
  return { body, kept: builder.result() }
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
    const { body, kept: held } = kept(client, upstream, separator)
    const expected = upstream.filter((text) => text !== '').join(',')
    const bytes = Buffer.concat(resolveKept(held.pieces, body))
    assert.equal(bytes.toString(), expected, JSON.stringify(client))
    assert.equal(held.bytes, Buffer.byteLength(expected), 'the byte count')
  }
})

test('an untouched run is one span; a bracketed result keeps only the bracket', () => {
  const result = '{"role":"tool","content":"' + 'x'.repeat(100_000) + '"}'
  const bracketed = result.replace('"content":"', '"content":"[#0001] ')
  const { kept: held } = kept(['{"a":1}', '{"b":2}', result], ['{"a":1}', '{"b":2}', bracketed])
  const own = held.pieces.filter((piece) => Buffer.isBuffer(piece)) as Buffer[]
  assert.deepEqual(
    own.map((piece) => piece.toString()),
    ['[#0001] '],
    'only the bracket is held',
  )
  assert.equal(held.pieces.length, 3, 'span, bracket, span')
  assert.ok(held.weight < 500, `weight ${held.weight}`)
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

test('an item changed in several places keeps only the changes: bracket, cap marker', () => {
  const lines = Array.from({ length: 2000 }, (_, i) => `row ${i} ` + 'x'.repeat(30) + '\\n')
  const client = '{"role":"tool","content":"' + lines.join('') + '"}'
  const capped =
    '{"role":"tool","content":"[#0007] ' +
    lines.slice(0, 200).join('') +
    '[… 1600 lines cut …]\\n' +
    lines.slice(1800).join('') +
    '"}'
  const { body, kept: held } = kept([client], [capped])
  assert.equal(Buffer.concat(resolveKept(held.pieces, body)).toString(), capped)
  const own = held.pieces.filter((piece) => Buffer.isBuffer(piece)) as Buffer[]
  assert.deepEqual(
    own.map((piece) => piece.toString().trim()),
    ['[#0007]', '[… 1600 lines cut …]'],
    'the bracket and the marker: the rest is the client’s bytes',
  )
})

test('whatever the proxy changed, the kept pieces give back its bytes exactly (random edits)', () => {
  let seed = 7
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31)
  const alphabet = 'ab \\n"é{}x'
  const text = (n: number) =>
    Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')
  for (let round = 0; round < 300; round++) {
    const client = Array.from({ length: 1 + Math.floor(random() * 4) }, () => text(random() * 300))
    const upstream = client.map((item) => {
      let out = item
      for (let edit = Math.floor(random() * 4); edit > 0; edit--) {
        const at = Math.floor(random() * (out.length + 1))
        const cut = Math.floor(random() * 40)
        out = out.slice(0, at) + (random() < 0.5 ? text(random() * 20) : '') + out.slice(at + cut)
      }
      return random() < 0.1 ? '' : out
    })
    const { body, kept: held } = kept(client, upstream)
    const expected = upstream.filter((item) => item !== '').join(',')
    assert.equal(
      Buffer.concat(resolveKept(held.pieces, body)).toString(),
      expected,
      `round ${round}`,
    )
    assert.equal(held.bytes, Buffer.byteLength(expected), `round ${round}: byte count`)
    const walked = held.pieces.reduce((n, p) => n + (Buffer.isBuffer(p) ? 64 + p.length : 48), 0)
    assert.equal(held.weight, walked, `round ${round}: the weight kept as pieces came`)
  }
})
