import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { arrayTail, arraySpan } from '../../src/wire/json-scan.js'

test('finds the top-level messages array, not a nested or quoted one', () => {
  const bytes = Buffer.from(
    '{"x":{"messages":[1]},"s":"\\"messages\\": [","messages": [ {"a":"]é"} , [2] ,3 ],"tools":[]}',
  )
  const at = (i: number) => bytes.toString('utf8', i, i + 1)
  const span = arraySpan(bytes, 'messages')!
  assert.equal(at(span.arrayStart), '[')
  assert.equal(at(span.arrayEnd), ']')
  assert.deepEqual(JSON.parse(bytes.toString('utf8', span.arrayStart, span.arrayEnd + 1)), [
    { a: ']é' },
    [2],
    3,
  ])
  assert.equal(at(span.lastEnd - 1), '3')
  assert.equal(arraySpan(Buffer.from('{"messages":[]}'), 'messages')!.lastEnd, 13)
  assert.equal(arraySpan(Buffer.from('{"model":"m"}'), 'messages'), undefined)
})

test('agrees with JSON.parse on random chat-like bodies, multi-byte text included', () => {
  const message = fc.record({
    role: fc.constantFrom('user', 'tool'),
    content: fc.string({ unit: 'grapheme', maxLength: 40 }),
  })
  fc.assert(
    fc.property(
      fc.array(message, { maxLength: 8 }),
      fc.string({ maxLength: 20 }),
      (messages, model) => {
        const bytes = Buffer.from(
          JSON.stringify({ model, messages, tools: [{ type: 'function' }] }),
        )
        const span = arraySpan(bytes, 'messages')
        if (!span) return false
        const inner: unknown = JSON.parse(
          bytes.toString('utf8', span.arrayStart, span.arrayEnd + 1),
        )
        const head = bytes.toString('utf8', 0, span.lastEnd)
        const tail = arrayTail(bytes, span.arrayStart + 1)
        return (
          JSON.stringify(inner) === JSON.stringify(messages) &&
          tail?.arrayEnd === span.arrayEnd &&
          head.endsWith(messages.length > 0 ? '}' : '[')
        )
      },
    ),
    { numRuns: 300 },
  )
})
