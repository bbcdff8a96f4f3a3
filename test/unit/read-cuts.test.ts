/**
 * Reads the agents cut themselves, as the real CLIs sent them through the proxy (Qwen Code 0.24.4,
 * opencode 1.18.33): a cut line or a partial read is never the file's whole content, and Qwen's
 * placeholder for a blank read is no line of the file.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { resultFacts, type FileViews } from '../../src/pipeline/facts.js'
import { classifyCall, defaultProfile, shownLines } from '../../src/tools/index.js'
import { createWorkspace, type Workspace } from '../../src/workspace/index.js'
import type { ToolDefinition } from '../../src/wire/chat.js'

/** Qwen Code 0.24.4's own tool definitions, as it sent them (its read_file's offset is 0-based). */
const qwenTools = new Map<string, ToolDefinition>(
  (
    JSON.parse(
      readFileSync(new URL('../fixtures/agents/qwen-code/tools.json', import.meta.url), 'utf8'),
    ) as ToolDefinition[]
  ).map((tool) => [tool.function?.name ?? '', tool]),
)

/** The live run's project: big.txt (2,600 lines), long.txt (a line of 5,000), empty.txt. */
function project() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'lembas-cuts-')))
  const bigLines = Array.from(
    { length: 2600 },
    (_, i) => `line ${i + 1} of the big file: ${'x'.repeat(i % 13)}`,
  )
  writeFileSync(join(root, 'big.txt'), bigLines.join('\n') + '\n')
  const longLines = [
    'alpha',
    'beta short line',
    'gamma',
    'L'.repeat(5000),
    'delta',
    'epsilon',
    'zeta',
  ]
  writeFileSync(join(root, 'long.txt'), longLines.join('\n') + '\n')
  writeFileSync(join(root, 'empty.txt'), '')
  writeFileSync(join(root, 'blank.txt'), '\n  \n')
  return { root, bigLines, longLines }
}

const noViews: FileViews = { content: async () => undefined }

async function facts(
  name: string,
  args: object,
  text: string,
  workspace: Workspace | undefined,
  views: FileViews = noViews,
) {
  return resultFacts(
    classifyCall(defaultProfile, name, JSON.stringify(args), qwenTools),
    text,
    defaultProfile,
    workspace,
    views,
  )
}

describe('Qwen Code 0.24.4 read_file: its own cuts', () => {
  const p = project()
  const big = join(p.root, 'big.txt')
  const trimmed = p.bigLines.map((l) => l.trimEnd())
  // Past its 25,000-character budget: line 764 cut after 10 characters, the marker after it.
  const budget =
    'Showing lines 1-764 of 2601 total lines.\n\n---\n\n' +
    trimmed.slice(0, 763).join('\n') +
    '\nline 764 o... [truncated]'

  test('a read cut at its budget shows the lines before the cut, never the whole file', async () => {
    const shown = shownLines(budget, defaultProfile.envelopes)
    assert.equal(shown.start, 1)
    assert.equal(shown.lines.length, 763)
    assert.equal(shown.lines.at(-1), 'line 763 of the big file: xxxxxxxx')
    assert.equal(shown.cut, true)
    const workspace = await createWorkspace([p.root])
    const exact = await facts('read_file', { file_path: big }, budget, workspace)
    assert.equal(exact.call.kind, 'read')
    if (exact.call.kind === 'read') {
      assert.deepEqual([exact.call.start, exact.call.end, exact.call.file?.lines], [1, 763, 2600])
    }
    const blind = await facts('read_file', { file_path: big }, budget, undefined)
    assert.equal(blind.call.kind, 'read')
    if (blind.call.kind === 'read') assert.deepEqual([blind.call.start, blind.call.end], [1, 763])
    assert.equal(blind.views, undefined, 'a cut read is not the file')
  })

  test('cut by bytes, the marker on a line of its own: the line before it may be cut too', () => {
    const text =
      'Showing lines 1-40 of 2601 total lines.\n\n---\n\n' +
      trimmed.slice(0, 39).join('\n') +
      '\nline 40 of\n... [truncated]'
    const shown = shownLines(text, defaultProfile.envelopes)
    assert.deepEqual([shown.start, shown.lines.length, shown.cut], [1, 39, true])
    const first = shownLines(
      'Showing lines 1-1 of 9 total lines.\n\n---\n\nLLLL... [truncated]',
      defaultProfile.envelopes,
    )
    assert.deepEqual(first.lines, [])
  })

  test('a range (its header) is exact in the workspace, but never the whole file blind', async () => {
    const text =
      'Showing lines 2101-2150 of 2601 total lines.\n\n---\n\n' +
      trimmed.slice(2100, 2150).join('\n')
    const workspace = await createWorkspace([p.root])
    const args = { file_path: big, offset: 2100, limit: 50 }
    const exact = await facts('read_file', args, text, workspace)
    assert.equal(exact.call.kind, 'read')
    if (exact.call.kind === 'read')
      assert.deepEqual([exact.call.start, exact.call.end], [2101, 2150])
    // Blind, a header with no range asked (its line limit) is still not the file.
    const head =
      'Showing lines 1-2000 of 2601 total lines.\n\n---\n\n' + trimmed.slice(0, 1999).join('\n')
    const blind = await facts('read_file', { file_path: big }, head, undefined)
    assert.equal(blind.call.kind, 'read')
    assert.equal(blind.views, undefined)
  })

  test('"(read_file completed with no output)" is no line of the file, in either mode', async () => {
    const text = '(read_file completed with no output)'
    const workspace = await createWorkspace([p.root])
    for (const file of ['empty.txt', 'blank.txt']) {
      for (const ws of [workspace, undefined]) {
        const result = await facts('read_file', { file_path: join(p.root, file) }, text, ws)
        assert.deepEqual(result, { call: { kind: 'other' } }, file)
      }
    }
  })
})

describe('opencode 1.18.33 read: a line cut at 2,000 characters', () => {
  const p = project()
  const long = join(p.root, 'long.txt')
  const text =
    `<path>${long}</path>\n<type>file</type>\n<content>\n` +
    p.longLines
      .map(
        (l, i) =>
          `${i + 1}: ${l.length > 2000 ? l.slice(0, 2000) + '... (line truncated to 2000 chars)' : l}`,
      )
      .join('\n') +
    '\n\n(End of file - total 7 lines)\n</content>'

  test('blind, the read is not the file: an edit after it keeps the tool answer', async () => {
    const read = await facts('read', { filePath: long }, text, undefined)
    assert.equal(read.call.kind, 'read')
    if (read.call.kind === 'read') assert.deepEqual([read.call.start, read.call.end], [1, 7])
    assert.equal(read.views, undefined, 'the cut line is not line 4')
    const edit = await facts(
      'edit',
      { filePath: long, oldString: 'beta short line', newString: 'beta EDITED line' },
      'Edit applied successfully.',
      undefined,
    )
    assert.equal(edit.call.kind, 'other')
  })

  test('in the workspace the cut line is not the file line: no exact bracket', async () => {
    const workspace = await createWorkspace([p.root])
    const read = await facts('read', { filePath: long }, text, workspace)
    assert.equal(read.call.kind, 'read')
    if (read.call.kind === 'read') assert.equal(read.call.file, undefined)
    assert.equal(read.views, undefined)
  })
})
