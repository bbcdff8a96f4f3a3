/**
 * The nesting check before a request is parsed (src/pipeline/json.ts): brackets are counted
 * outside strings only, with strings skipped to their closing quote. Checked against the depth
 * of the parsed value, on texts full of what could fool a skip: escaped quotes, runs of
 * backslashes, brackets inside strings; in one pass and in small steps (the paced scan of a
 * large body), cut anywhere, even inside an escape.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import {
  nestingDepth,
  nestingDepthPaced,
  parseBody,
  parseJson,
  SLICED_PARSE_BYTES,
} from '../../src/pipeline/json.js'

/** The depth of a parsed value: what the scan must find in its text. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf))
  if (value !== null && typeof value === 'object')
    return 1 + Math.max(0, ...Object.values(value).map(depthOf))
  return 0
}

// Strings made of the characters a skip could trip on.
const tricky = fc
  .array(fc.constantFrom('"', '\\', '\\\\', '\\"', '[', ']', '{', '}', 'a', ' ', '\n', 'é', '→'), {
    maxLength: 12,
  })
  .map((parts) => parts.join(''))

const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    tricky,
    fc.integer(),
    fc.constant(null),
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(tricky, tie('node'), { maxKeys: 3 }),
  ),
})).node

test('the depth of any JSON text is its value’s, in one pass and in steps cut anywhere', async () => {
  await fc.assert(
    fc.asyncProperty(
      value,
      fc.integer({ min: 1, max: 7 }),
      fc.boolean(),
      async (v, step, pretty) => {
        const text = JSON.stringify(v, null, pretty ? 2 : undefined)
        const expected = depthOf(JSON.parse(text))
        assert.equal(nestingDepth(text), expected, text)
        assert.equal(await nestingDepthPaced(text, step), expected, `${text} in steps of ${step}`)
      },
    ),
    { numRuns: 2000 },
  )
})

test('a request nested past the limit is refused before it is parsed, brackets in strings are not counted', () => {
  const deep = '['.repeat(600) + ']'.repeat(600)
  assert.throws(() => parseJson(deep, 512), /nests deeper than 512 levels/)
  const quoted = JSON.stringify({ content: '['.repeat(5000) + '\\"' + '{'.repeat(5000) })
  assert.equal(nestingDepth(quoted), 1)
  assert.deepEqual(parseJson(quoted, 512), JSON.parse(quoted))
})

test('a body past SLICED_PARSE_BYTES, parsed element by element, is the value JSON.parse makes', async () => {
  const padding = 'x'.repeat(4096) + 'é→'
  await fc.assert(
    fc.asyncProperty(
      fc.array(value, { minLength: 1, maxLength: 6 }),
      fc.constantFrom('', ' ', '\n  '),
      async (values, space) => {
        // Enough elements to pass the size, each holding the tricky values and some padding.
        const messages = Array.from({ length: 20 }, (_, i) => ({ i, values, padding }))
        const text = JSON.stringify({ model: 'm', messages, after: values }, null, space)
        const bytes = Buffer.from(text)
        assert.ok(bytes.length > SLICED_PARSE_BYTES)
        assert.deepEqual((await parseBody(bytes, 'messages', 512)).value, JSON.parse(text))
      },
    ),
    { numRuns: 40 },
  )
})

test('past SLICED_PARSE_BYTES, an element nested too deep or broken is refused as a whole body is', async () => {
  const filler = Array.from({ length: 40 }, () => ({ role: 'user', content: 'y'.repeat(2000) }))
  const body = (bad: string) =>
    Buffer.from(
      `{"model":"m","messages":[${filler.map((m) => JSON.stringify(m)).join(',')},${bad}]}`,
    )
  const deep = '['.repeat(600) + ']'.repeat(600)
  await assert.rejects(parseBody(body(deep), 'messages', 512), /nests deeper than/)
  await assert.rejects(parseBody(body('{"role":"user",}'), 'messages', 512), /not valid JSON/)
  const ok = body('{"role":"user","content":"fine"}')
  assert.ok(ok.length > SLICED_PARSE_BYTES)
  assert.equal(
    ((await parseBody(ok, 'messages', 512)).value as { messages: unknown[] }).messages.length,
    41,
  )
})
