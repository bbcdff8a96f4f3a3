/**
 * Cline 4's read_files of several files in one call: each file is a read of its own, bracketed
 * or stubbed inside its own string of the JSON answer, and a stub of it later names the call's id.
 * From the call and the answer as Cline 4 writes them (blind mode), through the classifier,
 * resultFacts and the renderer, as the pipeline runs them.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { loadLoop } from '../../src/config/loop.js'
import { DedupeTable, renderResult, type Rendering } from '../../src/context/index.js'
import { resultFacts, type FileViews } from '../../src/pipeline/facts.js'
import { actionReader } from '../../src/replay/actions.js'
import { classifyCall, defaultProfile } from '../../src/tools/index.js'

const rules = loadLoop().context
const noViews: FileViews = { content: async () => undefined }

/** A file's lines as Cline 4's readTextWindow numbers them: right-aligned to the last number. */
function numbered(lines: readonly string[], from = 1): string {
  const width = String(from + lines.length - 1).length
  return lines.map((line, i) => `${String(from + i).padStart(width)} | ${line}`).join('\n')
}

interface Entry {
  readonly path: string
  readonly lines?: readonly string[]
  readonly error?: string
}

/** The call and its answer, as Cline 4 sends them (JSON.stringify, one entry per file). */
function readFiles(files: readonly Entry[]) {
  const args = JSON.stringify({ files: files.map((file) => ({ path: file.path })) })
  const answer = JSON.stringify(
    files.map((file) =>
      file.error === undefined
        ? { query: file.path, result: numbered(file.lines ?? []), success: true }
        : { query: file.path, result: '', error: file.error, success: false },
    ),
  )
  return { args, answer }
}

/** One result through the pipeline's steps; its entry goes into the table, as when it is sent. */
async function render(
  files: readonly Entry[],
  number: number,
  table: DedupeTable,
): Promise<Rendering> {
  const { args, answer } = readFiles(files)
  const classified = classifyCall(defaultProfile, 'read_files', args, new Map())
  const facts = await resultFacts(classified, answer, defaultProfile, undefined, noViews)
  assert.equal(facts.unrecognised, undefined)
  const rendering = renderResult({ number, call: facts.call, text: answer }, table, rules)
  if (rendering.entry) table.add(rendering.entry)
  return rendering
}

/** The answer under the id line, parsed: it must still be JSON. */
function answerOf(rendering: Rendering, id: string): { result: string; success: boolean }[] {
  assert.ok(rendering.text.startsWith(`[${id}]\n[`), rendering.text.slice(0, 80))
  return JSON.parse(rendering.text.slice(id.length + 3)) as { result: string; success: boolean }[]
}

const A = ['export const a = "quoted \\"a\\"";', '\ttabbed', '']
const B = ['# b', 'line two']

describe('Cline 4: read_files of several files', () => {
  test('each file gets its bracket inside its own string; the rest of the answer stays', async () => {
    const table = new DedupeTable()
    const first = await render(
      [
        { path: '/p/a.ts', lines: A },
        { path: '/p/b.md', lines: B },
      ],
      1,
      table,
    )
    const [a, b] = answerOf(first, '#0001')
    assert.equal(a!.result, `[#0001 /p/a.ts lines 1-3]\n${numbered(A)}`)
    assert.equal(b!.result, `[#0001 /p/b.md lines 1-2]\n${numbered(B)}`)
    assert.equal(first.stub, undefined)
    assert.deepEqual(
      first.reads?.map((read) => [read.path, read.id, read.start, read.end]),
      [
        ['/p/a.ts', '#0001', 1, 3],
        ['/p/b.md', '#0001', 1, 2],
      ],
    )

    // One of them again on its own: a stub of the call that read both.
    const again = await render([{ path: '/p/b.md', lines: B }], 2, table)
    assert.equal(
      again.text,
      '[#0002 /p/b.md lines 1-2] Unchanged since #0001, which already shows lines 1-2.',
    )

    // Both again, with a file that is not there: the reads stubbed in their strings, the error
    // as it came; the full form shows every file, for a request that no longer has #0001.
    const third = await render(
      [
        { path: '/p/a.ts', lines: A },
        { path: '/p/nope.ts', error: 'Error reading file: ENOENT' },
      ],
      3,
      table,
    )
    const [stubbed, failed] = answerOf(third, '#0003')
    assert.equal(
      stubbed!.result,
      '[#0003 /p/a.ts lines 1-3] Unchanged since #0001, which already shows lines 1-3.',
    )
    assert.deepEqual(failed, {
      query: '/p/nope.ts',
      result: '',
      error: 'Error reading file: ENOENT',
      success: false,
    })
    assert.deepEqual(third.stub?.targets, ['#0001'])
    assert.equal(third.entry, undefined, 'a stub is no target')
    assert.deepEqual(third.reads, [], 'nor a read for the table')
    const full = answerOf({ text: third.stub!.full.text }, '#0003')
    assert.equal(full[0]!.result, `[#0003 /p/a.ts lines 1-3]\n${numbered(A)}`)
  })

  test('a file changed since is read in full beside a stub of one that did not', async () => {
    const table = new DedupeTable()
    await render(
      [
        { path: '/p/a.ts', lines: A },
        { path: '/p/b.md', lines: B },
      ],
      1,
      table,
    )
    const changed = ['# b', 'line 2']
    const next = await render(
      [
        { path: '/p/a.ts', lines: A },
        { path: '/p/b.md', lines: changed },
      ],
      2,
      table,
    )
    const [a, b] = answerOf(next, '#0002')
    assert.match(a!.result, /^\[#0002 \/p\/a\.ts lines 1-3\] Unchanged since #0001/)
    assert.equal(b!.result, `[#0002 /p/b.md lines 1-2]\n${numbered(changed)}`)
    // The new b is a target; later reads of it name #0002.
    const later = await render([{ path: '/p/b.md', lines: changed }], 3, table)
    assert.match(later.text, /Unchanged since #0002, which already shows lines 1-2\.$/)
  })

  test('the same file twice in one call: the second names the first, in the same result', async () => {
    const table = new DedupeTable()
    const twice = await render(
      [
        { path: '/p/a.ts', lines: A },
        { path: '/p/a.ts', lines: A },
      ],
      1,
      table,
    )
    const [first, second] = answerOf(twice, '#0001')
    assert.equal(first!.result, `[#0001 /p/a.ts lines 1-3]\n${numbered(A)}`)
    assert.equal(
      second!.result,
      '[#0001 /p/a.ts lines 1-3] Unchanged since #0001, which already shows lines 1-3.',
    )
    assert.equal(twice.stub, undefined, 'its own id is always in front of the model')
  })

  test('no file read: the answer as it came, under its id', async () => {
    const rendering = await render(
      [
        { path: '/p/x', error: 'Error reading file: ENOENT' },
        { path: '/p/y', error: 'Error reading file: Path is not a file: /p/y' },
      ],
      1,
      new DedupeTable(),
    )
    const { answer } = readFiles([
      { path: '/p/x', error: 'Error reading file: ENOENT' },
      { path: '/p/y', error: 'Error reading file: Path is not a file: /p/y' },
    ])
    assert.equal(rendering.text, `[#0001]\n${answer}`)
  })

  test('replay counts each file stubbed inside the answer as a stub', async () => {
    const table = new DedupeTable()
    const both = [
      { path: '/p/a.ts', lines: A },
      { path: '/p/b.md', lines: B },
    ]
    const renderings = [
      await render(both, 1, table),
      await render(both, 2, table),
      await render([{ path: '/p/a.ts', lines: A }], 3, table),
    ]
    const read = actionReader(rules)
    const counts = renderings.map(
      (rendering) =>
        read([{ role: 'tool', tool_call_id: 'c', content: rendering.text }], new Set()).stubs,
    )
    assert.deepEqual(counts, [0, 2, 1])
  })

  test('any content: the answer stays JSON, each file its lines under its bracket (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(
            fc.string({ maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, ' ')),
            {
              minLength: 1,
              maxLength: 6,
            },
          ),
          { minLength: 2, maxLength: 4 },
        ),
        async (contents) => {
          const files = contents.map((lines, i) => ({ path: `/p/f${i}.txt`, lines }))
          const rendering = await render(files, 7, new DedupeTable())
          const answer = answerOf(rendering, '#0007')
          assert.deepEqual(
            answer.map((entry) => entry.result),
            files.map(
              (file) =>
                `[#0007 ${file.path} lines 1-${file.lines.length}]\n${numbered(file.lines)}`,
            ),
          )
        },
      ),
      { numRuns: 60 },
    )
  })
})

/** Cline CLI 3.0.65's answers of a 1,000-line file, cut in the middle by its message builder. */
const cutReads = JSON.parse(
  readFileSync(new URL('../fixtures/agents/cline-v4/cut-reads.json', import.meta.url), 'utf8'),
) as { results: { call: { name: string; arguments: string }; result: string }[] }

describe('Cline 4: a read cut in the middle (the real CLI, 8,000 characters a result)', () => {
  test('placed by its head, never a stub (its tail would be lost), never drift', async () => {
    const table = new DedupeTable()
    const texts: string[] = []
    for (const [i, { call, result }] of cutReads.results.entries()) {
      const classified = classifyCall(defaultProfile, call.name, call.arguments, new Map())
      const facts = await resultFacts(classified, result, defaultProfile, undefined, noViews)
      assert.equal(facts.unrecognised, undefined, `result ${i + 1}`)
      const rendering = renderResult(
        { number: i + 1, call: facts.call, text: result },
        table,
        rules,
      )
      if (rendering.entry) table.add(rendering.entry)
      texts.push(rendering.text)
    }
    const path = '/work/project/src/huge.ts'
    assert.equal(texts[0], `[#0001 ${path} lines 1-150]\n${cutReads.results[0]!.result}`)
    // The whole file, its window cut: the lines before the cut (the last one may be partial), the
    // rest shown as it came. Lines 1-82 lie inside #0001, but the tail after the cut does not.
    assert.equal(texts[1], `[#0002 ${path} lines 1-82]\n${cutReads.results[1]!.result}`)
    assert.equal(texts[2], `[#0003 ${path} lines 1-82]\n${cutReads.results[2]!.result}`)
  })
})
