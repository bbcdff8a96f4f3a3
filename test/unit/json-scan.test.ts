import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { arrayTail, arraySpan } from '../../src/wire/json-scan.js'

test('finds the top-level messages array, not a nested or quoted one', async () => {
  const bytes = Buffer.from(
    '{"x":{"messages":[1]},"s":"\\"messages\\": [","messages": [ {"a":"]é"} , [2] ,3 ],"tools":[]}',
  )
  const at = (i: number) => bytes.toString('utf8', i, i + 1)
  const span = (await arraySpan(bytes, 'messages'))!
  assert.equal(at(span.arrayStart), '[')
  assert.equal(at(span.arrayEnd), ']')
  assert.deepEqual(JSON.parse(bytes.toString('utf8', span.arrayStart, span.arrayEnd + 1)), [
    { a: ']é' },
    [2],
    3,
  ])
  assert.equal(at(span.lastEnd - 1), '3')
  assert.equal((await arraySpan(Buffer.from('{"messages":[]}'), 'messages'))!.lastEnd, 13)
  assert.equal(await arraySpan(Buffer.from('{"model":"m"}'), 'messages'), undefined)
})

test('agrees with JSON.parse on random chat-like bodies, multi-byte text included', async () => {
  const message = fc.record({
    role: fc.constantFrom('user', 'tool'),
    content: fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      // What a skip to the closing quote could trip on: escaped quotes, backslash runs, brackets.
      fc
        .array(fc.constantFrom('"', '\\', '\\\\', '[', ']', '{', '}', ',', 'a', '→'), {
          maxLength: 16,
        })
        .map((parts) => parts.join('')),
    ),
  })
  await fc.assert(
    fc.asyncProperty(
      fc.array(message, { maxLength: 8 }),
      fc.string({ maxLength: 20 }),
      async (messages, model) => {
        const bytes = Buffer.from(
          JSON.stringify({ model, messages, tools: [{ type: 'function' }] }),
        )
        const span = await arraySpan(bytes, 'messages')
        if (!span) return false
        const inner: unknown = JSON.parse(
          bytes.toString('utf8', span.arrayStart, span.arrayEnd + 1),
        )
        const head = bytes.toString('utf8', 0, span.lastEnd)
        const tail = await arrayTail(bytes, span.arrayStart + 1)
        return (
          JSON.stringify(inner) === JSON.stringify(messages) &&
          tail?.arrayEnd === span.arrayEnd &&
          head.endsWith(messages.length > 0 ? '}' : '[')
        )
      },
    ),
    { numRuns: 1000 },
  )
})

test('a body of many megabytes, one huge string across the scan steps, ends where JSON.parse says', async () => {
  const huge = 'x'.repeat(3 << 20)
  const bytes = Buffer.from(
    JSON.stringify({ messages: [{ content: huge }, { content: 'y' }], tools: [] }),
  )
  const span = await arraySpan(bytes, 'messages', 5)
  assert.deepEqual(JSON.parse(bytes.toString('utf8', span!.arrayStart, span!.arrayEnd + 1))[1], {
    content: 'y',
  })
  assert.equal(span!.ends.length, 2)
})
