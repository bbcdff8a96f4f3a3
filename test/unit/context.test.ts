import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { loadLoop } from '../../src/config/loop.js'
import {
  capText,
  countChars,
  DedupeTable,
  formatId,
  parseId,
  renderRecall,
  renderResult,
  splitLines,
  unifiedHunks,
} from '../../src/context/index.js'

const rules = loadLoop().context

describe('ids', () => {
  test('format in lowercase hex with at least four digits', () => {
    assert.deepEqual(
      [1, 9, 10, 255, 0xffff, 0x10000].map((n) => formatId(n, 4)),
      ['#0001', '#0009', '#000a', '#00ff', '#ffff', '#10000'],
    )
  })
  test('parse with or without #, and refuse what is not an id', () => {
    assert.equal(parseId('#000a'), 10)
    assert.equal(parseId('000A'), 10)
    assert.equal(parseId(' #10000 '), 0x10000)
    for (const bad of ['', '#', 'zz', '#0000', '-1', '1.5'])
      assert.equal(parseId(bad), undefined, bad)
  })
})

describe('text', () => {
  test('a final newline ends the last line; CR stays on its line', () => {
    assert.deepEqual(splitLines('a\r\nb\r\n'), { lines: ['a\r', 'b\r'], trailingNewline: true })
    assert.deepEqual(splitLines('a\nb'), { lines: ['a', 'b'], trailingNewline: false })
    assert.deepEqual(splitLines(''), { lines: [], trailingNewline: false })
  })
  test('characters are code points', () => {
    assert.equal(countChars('é漢😀'), 3)
    // Lone surrogates (a cut emoji) count one each, as the string iterator counts them.
    const unit = fc.constantFrom('a', 'é', '😀', '\uD800', '\uDC00', '\uDBFF\uDFFF', '\n')
    fc.assert(
      fc.property(
        fc.string({ unit, maxLength: 60 }),
        (text) => countChars(text) === [...text].length,
      ),
      { numRuns: 2000 },
    )
  })
})

describe('capText (property)', () => {
  const line = fc.string({ unit: fc.constantFrom('a', 'é', '😀', ' ', '\r'), maxLength: 300 })
  const text = fc.array(line, { maxLength: 900 }).map((lines) => lines.join('\n'))

  test('within both limits nothing changes; over them the head and tail stay within their budgets', () => {
    fc.assert(
      fc.property(text, (input) => {
        const out = capText(input, '#0001', rules)
        const lines = splitLines(input).lines
        const over = lines.length > rules.cap.max_lines || countChars(input) > rules.cap.max_chars
        if (!over) return out === input
        const outLines = splitLines(out).lines
        const elidedAt = outLines.findIndex((l) =>
          /^\[\d+ lines elided, full output #0001\]$/.test(l),
        )
        if (elidedAt < 0) return false
        const head = outLines.slice(0, elidedAt)
        const tail = outLines.slice(elidedAt + 1)
        const count = Number(/^\[(\d+)/.exec(outLines[elidedAt]!)![1])
        const cut = head.length === 1 && head[0]!.endsWith('[…cut]')
        return (
          head.length <= rules.cap.head_lines &&
          (cut || countChars(head.join('\n')) <= rules.cap.head_chars) &&
          tail.length <= rules.cap.tail_lines &&
          countChars(tail.join('\n')) <= rules.cap.tail_chars &&
          count === lines.length - head.length - tail.length &&
          (cut || head.every((l, i) => l === lines[i])) &&
          tail.every((l, i) => l === lines[lines.length - tail.length + i])
        )
      }),
      { numRuns: 200 },
    )
  })
})

describe('unifiedHunks', () => {
  test('three lines of context, hunks only, far changes in separate hunks', () => {
    const before = Array.from({ length: 30 }, (_, i) => `l${i + 1}`).join('\n') + '\n'
    const after = before.replace('l2\n', 'L2\n').replace('l28\n', 'L28\n')
    const hunks = unifiedHunks(before, after).split('\n')
    assert.deepEqual(
      hunks.filter((l) => l.startsWith('@@')),
      ['@@ -1,5 +1,5 @@', '@@ -25,6 +25,6 @@'],
    )
    assert.ok(
      !hunks.some((l) => l.startsWith('---') || l.startsWith('+++') || l.startsWith('Index')),
    )
  })
  test('equal texts have no hunks', () => {
    assert.equal(unifiedHunks('a\n', 'a\n'), '')
  })
})

describe('an output inside a JSON answer (Cline 4)', () => {
  const wrap = (output: string) => {
    const text = JSON.stringify([{ query: 'npm test', result: output, success: true }])
    const escaped = JSON.stringify(output)
    const at = text.indexOf(escaped)
    return {
      text,
      call: {
        kind: 'other' as const,
        wrapped: {
          before: text.slice(0, at + 1),
          output,
          after: text.slice(at + escaped.length - 1),
        },
      },
    }
  }

  test('a long one is capped inside: the answer stays JSON, recall shows the output', () => {
    fc.assert(
      fc.property(fc.integer({ min: 401, max: 3000 }), fc.string({ maxLength: 20 }), (n, word) => {
        const output = Array.from({ length: n }, (_, i) => `${word}"\\${i}`).join('\n') + '\n'
        const { text, call } = wrap(output)
        const rendering = renderResult({ number: 12, call, text }, new DedupeTable(), rules)
        assert.ok(rendering.text.startsWith('[#000c]\n[{"query":"npm test","result":"'))
        const answer = JSON.parse(rendering.text.slice('[#000c]\n'.length))
        assert.equal(answer[0].result, capText(output, '#000c', rules))
        assert.equal(answer[0].success, true)
        assert.equal(rendering.stored, output)
      }),
      { numRuns: 30 },
    )
  })

  test('a long search inside JSON: capped inside, and the same answer again "Same result as"', () => {
    const output = Array.from({ length: 900 }, (_, i) => `src/a.ts:${i}: match "${i}"`).join('\n')
    const { text, call } = wrap(output)
    const listing = {
      kind: 'listing' as const,
      group: 'grep',
      name: 'search_codebase',
      args: { queries: ['match'] },
      wrapped: call.wrapped,
    }
    const table = new DedupeTable()
    const first = renderResult({ number: 5, call: listing, text }, table, rules)
    assert.equal(
      JSON.parse(first.text.slice('[#0005]\n'.length))[0].result,
      capText(output, '#0005', rules),
    )
    assert.equal(first.stored, output)
    table.add(first.entry!)
    const again = renderResult({ number: 6, call: listing, text }, table, rules)
    assert.equal(again.text, '[#0006] Same result as #0005.')
  })

  test('a short one is the answer as it came', () => {
    const { text, call } = wrap('ok\n')
    const rendering = renderResult({ number: 1, call, text }, new DedupeTable(), rules)
    assert.equal(rendering.text, `[#0001]\n${text}`)
    assert.equal(rendering.stored, undefined)
  })
})

describe('recall', () => {
  test("an elided call shown before the result (--elide-inputs) is no line of it: offsets are the result's", () => {
    const stored = 'out 1\nout 2\nout 3\n'
    const preamble = 'Input: {"command":"seq 3"}'
    assert.equal(
      renderRecall({ id: '#0005', target: '#0001', stored, offset: 2, limit: 1, preamble }, rules),
      '[#0005 recall #0001 lines 2-2 of 3]\n' + preamble + '\n\nout 2',
    )
    assert.equal(
      renderRecall({ id: '#0005', target: '#0001', stored, offset: 2, limit: 1 }, rules),
      '[#0005 recall #0001 lines 2-2 of 3]\nout 2',
    )
  })

  test('past its budget (beyond the spec): the whole lines that fit and the offset of the rest; a line too long for any round shows its start', () => {
    const t = loadLoop().proxy.recall
    const budget = (chars: number) => ({
      chars,
      max: 100,
      cutNote: t.cut_note,
      lineCutNote: t.line_cut_note,
    })
    const stored = 'aaaaaaaaaa\nbbbbbbbbbb\ncccccccccc\n'
    const request = { id: '#0005', target: '#0001', stored }
    const whole = renderRecall(request, rules)
    assert.equal(renderRecall({ ...request, budget: budget(whole.length) }, rules), whole)
    const cut = (next: number) => t.cut_note.replace('{next}', String(next)).replace('{max}', '100')
    // The preamble counts: bracket (35), preamble (24) and one line fit in 75, two do not.
    const preamble = 'Input: {"command":"x"}'
    assert.equal(
      renderRecall({ ...request, preamble, budget: budget(75) }, rules),
      `[#0005 recall #0001 lines 1-1 of 3]\n${preamble}\n\naaaaaaaaaa\n${cut(2)}`,
    )
    // No line fits what is left, but a round would show it whole: the next round.
    assert.equal(renderRecall({ ...request, budget: budget(20) }, rules), `[#0005] ${cut(1)}`)
    const long = { ...request, stored: 'é'.repeat(150) + '\nz' }
    const note = t.line_cut_note
      .replace('{line}', '1')
      .replace('{shown}', '14')
      .replace('{length}', '150')
      .replace('{next}', '2')
    assert.equal(
      renderRecall({ ...long, budget: budget(50) }, rules),
      `[#0005 recall #0001 lines 1-1 of 2]\n${'é'.repeat(14)}\n${note}`,
    )
  })
})
