import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { arrayTail, messagesSpan } from '../../src/wire/json-scan.js'

test('finds the top-level messages array, not a nested or quoted one', () => {
  const text =
    '{"x":{"messages":[1]},"s":"\\"messages\\": [","messages": [ {"a":"]"} , [2] ,3 ],"tools":[]}'
  const span = messagesSpan(text)!
  assert.equal(text[span.arrayStart], '[')
  assert.equal(text[span.arrayEnd], ']')
  assert.deepEqual(JSON.parse(text.slice(span.arrayStart, span.arrayEnd + 1)), [{ a: ']' }, [2], 3])
  assert.equal(text.slice(span.lastEnd - 1, span.lastEnd), '3')
  assert.equal(messagesSpan('{"messages":[]}')!.lastEnd, 13)
  assert.equal(messagesSpan('{"model":"m"}'), undefined)
})

test('agrees with JSON.parse on random chat-like bodies', () => {
  const message = fc.record({
    role: fc.constantFrom('user', 'tool'),
    content: fc.string({ maxLength: 40 }),
  })
  fc.assert(
    fc.property(
      fc.array(message, { maxLength: 8 }),
      fc.string({ maxLength: 20 }),
      (messages, model) => {
        const text = JSON.stringify({ model, messages, tools: [{ type: 'function' }] })
        const span = messagesSpan(text)
        if (!span) return false
        const inner = JSON.parse(text.slice(span.arrayStart, span.arrayEnd + 1))
        const head = text.slice(0, span.lastEnd)
        const tail = arrayTail(text, span.arrayStart + 1)
        return (
          JSON.stringify(inner) === JSON.stringify(messages) &&
          tail?.arrayEnd === span.arrayEnd &&
          head.endsWith(messages.length ? '}' : '[')
        )
      },
    ),
    { numRuns: 300 },
  )
})
