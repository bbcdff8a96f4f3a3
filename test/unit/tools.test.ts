import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  classifyCall,
  commandArgv,
  defaultProfile,
  parsePatch,
  searchReplaceBlocks,
  shellCall,
  shownLines,
} from '../../src/tools/index.js'
import type { ToolDefinition } from '../../src/wire/chat.js'

const none = new Map<string, ToolDefinition>()

describe('classifyCall (defaultProfile profile)', () => {
  test('reads normalise their ranges to 1-based inclusive lines', () => {
    assert.deepEqual(
      classifyCall(defaultProfile, 'Read', '{"file_path":"/a.ts","offset":50,"limit":31}', none),
      { kind: 'read', path: '/a.ts', start: 50, end: 80 },
    )
    assert.deepEqual(classifyCall(defaultProfile, 'read', '{"filePath":"/a.ts"}', none), {
      kind: 'read',
      path: '/a.ts',
      start: 1,
    })
    assert.deepEqual(
      classifyCall(
        defaultProfile,
        'read_file',
        '{"path":"a.ts","start_line":3,"end_line":9}',
        none,
      ),
      { kind: 'read', path: 'a.ts', start: 3, end: 9 },
    )
    assert.deepEqual(
      classifyCall(
        defaultProfile,
        'str_replace_editor',
        '{"command":"view","path":"/a.ts","view_range":[5,-1]}',
        none,
      ),
      { kind: 'read', path: '/a.ts', start: 5 },
    )
  })

  test("an offset is 0-based when the tool's own schema says so (Qwen Code's read_file)", () => {
    const qwen = new Map<string, ToolDefinition>([
      [
        'read_file',
        {
          type: 'function',
          function: {
            name: 'read_file',
            parameters: {
              type: 'object',
              properties: {
                file_path: { type: 'string' },
                offset: {
                  type: 'number',
                  description:
                    "Optional: For text files, the 0-based line number to start reading from. Requires 'limit' to be set.",
                },
                limit: { type: 'number' },
              },
            },
          },
        },
      ],
    ])
    assert.deepEqual(
      classifyCall(
        defaultProfile,
        'read_file',
        '{"file_path":"/a.ts","offset":0,"limit":10}',
        qwen,
      ),
      { kind: 'read', path: '/a.ts', start: 1, end: 10 },
    )
  })

  test('listings and searches keep their arguments; the rest is other', () => {
    assert.deepEqual(classifyCall(defaultProfile, 'Glob', '{"pattern":"*.ts"}', none), {
      kind: 'glob',
      name: 'Glob',
      args: { pattern: '*.ts' },
    })
    assert.equal(classifyCall(defaultProfile, 'grep_search', '{"pattern":"x"}', none).kind, 'grep')
    assert.equal(classifyCall(defaultProfile, 'Bash', '{"command":"ls"}', none).kind, 'other')
    assert.equal(classifyCall(defaultProfile, 'Read', 'not json', none).kind, 'other')
    assert.equal(
      classifyCall(defaultProfile, 'Read', '{"offset":3}', none).kind,
      'other',
      'a read without a path',
    )
    assert.deepEqual(
      classifyCall(defaultProfile, 'str_replace_editor', '{"command":"create","path":"/a"}', none),
      { kind: 'write', path: '/a' },
    )
    assert.deepEqual(
      classifyCall(
        defaultProfile,
        'edit',
        '{"filePath":"/a","oldString":"x","newString":"y"}',
        none,
      ),
      {
        kind: 'edit',
        path: '/a',
        replacements: [{ old: 'x', new: 'y', all: false }],
      },
    )
  })
})

describe('shownLines', () => {
  test('takes off each agent numbering and reads the first line number', () => {
    assert.deepEqual(shownLines('     7→a\n     8→b'), { start: 7, lines: ['a', 'b'] })
    assert.deepEqual(shownLines('00001| a\n00002| '), { start: 1, lines: ['a', ''] })
    assert.deepEqual(shownLines('3: x\n4: y\n'), { start: 3, lines: ['x', 'y'] })
    assert.deepEqual(shownLines('  9 | a\n 10 | b'), { start: 9, lines: ['a', 'b'] })
    assert.deepEqual(shownLines('L1: a'), { start: 1, lines: ['a'] })
  })
  test('raw text, or numbering with a gap, is the lines themselves', () => {
    assert.deepEqual(shownLines('plain\ntext\n'), { lines: ['plain', 'text'] })
    assert.deepEqual(shownLines('1: a\n3: b'), { lines: ['1: a', '3: b'] })
  })
})

describe('read envelopes and agent stubs (captured results)', () => {
  test("opencode's <path>/<content> wrapper comes off, and its footer states the length", () => {
    const text =
      '<path>/p/u.ts</path>\n<type>file</type>\n<content>\n1: a\n2: b\n\n(End of file - total 2 lines)\n</content>'
    assert.deepEqual(shownLines(text, defaultProfile.envelopes), {
      start: 1,
      lines: ['a', 'b'],
      total: 2,
    })
    const part =
      '<path>/p/u.ts</path>\n<type>file</type>\n<content>\n101: x\n\n(Showing lines 101-101 of 301. Use offset=102 to continue.)\n</content>'
    assert.deepEqual(shownLines(part, defaultProfile.envelopes), {
      start: 101,
      lines: ['x'],
      total: 301,
    })
  })
  test("opencode's directory read is a listing", () => {
    const text =
      '<path>/p/src</path>\n<type>directory</type>\n<entries>\na.ts\n\n(1 entries)\n</entries>'
    assert.equal(shownLines(text, defaultProfile.envelopes).kind, 'list')
  })
  test("Qwen Code's partial-read header gives the range", () => {
    const text = 'Showing lines 101-102 of 302 total lines.\n\n---\n\nfoo\nbar'
    assert.deepEqual(shownLines(text, defaultProfile.envelopes), {
      start: 101,
      lines: ['foo', 'bar'],
    })
  })
  test("agents' own placeholders are recognised", () => {
    const qwen =
      '[File src/big.ts unchanged since last read in this session — the full content was provided earlier in this conversation.]'
    for (const text of [
      qwen,
      '[Old tool result content cleared]',
      'File unchanged since last read. The content from the earlier Read tool_result in this conversation is still current — refer to that instead of re-reading.',
    ]) {
      assert.ok(
        defaultProfile.agentStubs.some((stub) => stub.test(text)),
        text,
      )
    }
  })
})

describe('edits, patches and shell commands', () => {
  test('multi-edits keep their order; SEARCH/REPLACE blocks become replacements', () => {
    const multi = classifyCall(
      defaultProfile,
      'MultiEdit',
      JSON.stringify({
        file_path: '/a',
        edits: [
          { old_string: 'a', new_string: 'b' },
          { old_string: 'c', new_string: 'd', replace_all: true },
        ],
      }),
      none,
    )
    assert.deepEqual(multi, {
      kind: 'edit',
      path: '/a',
      replacements: [
        { old: 'a', new: 'b', all: false },
        { old: 'c', new: 'd', all: true },
      ],
    })
    const cline =
      '------- SEARCH\nold line\n=======\nnew line\n+++++++ REPLACE\n------- SEARCH\nx\n=======\ny\n+++++++ REPLACE'
    assert.deepEqual(searchReplaceBlocks(cline), [
      { old: 'old line', new: 'new line', all: false },
      { old: 'x', new: 'y', all: false },
    ])
    const roo = '<<<<<<< SEARCH\n:start_line:3\n-------\nfoo\n=======\nbar\n>>>>>>> REPLACE'
    assert.deepEqual(searchReplaceBlocks(roo), [{ old: 'foo', new: 'bar', all: false }])
  })

  test('apply_patch: add, delete and update files in order', () => {
    const patch = [
      '*** Begin Patch',
      '*** Update File: src/a.ts',
      '@@ function f',
      ' keep',
      '-old',
      '+new',
      '*** Add File: docs/new.md',
      '+hello',
      '+world',
      '*** Delete File: old.md',
      '*** End Patch',
    ].join('\n')
    assert.deepEqual(parsePatch(patch), [
      {
        op: 'update',
        path: 'src/a.ts',
        hunks: [{ before: ['keep', 'old'], after: ['keep', 'new'], atEnd: false }],
      },
      { op: 'add', path: 'docs/new.md', content: 'hello\nworld\n' },
      { op: 'delete', path: 'old.md' },
    ])
    assert.equal(parsePatch('not a patch'), undefined)
    assert.equal(
      classifyCall(defaultProfile, 'apply_patch', JSON.stringify({ input: patch }), none).kind,
      'patch',
    )
  })

  test('shell reads and searches are recognised only when the command is plain', () => {
    assert.deepEqual(shellCall('cat src/a.ts'), {
      kind: 'read',
      path: 'src/a.ts',
      start: 1,
      shell: true,
    })
    assert.deepEqual(shellCall("sed -n '10,20p' src/a.ts"), {
      kind: 'read',
      path: 'src/a.ts',
      start: 10,
      end: 20,
      shell: true,
    })
    assert.deepEqual(shellCall('head -n 5 a.ts'), {
      kind: 'read',
      path: 'a.ts',
      start: 1,
      end: 5,
      shell: true,
    })
    assert.deepEqual(shellCall('nl -ba a.ts'), {
      kind: 'read',
      path: 'a.ts',
      start: 1,
      shell: true,
    })
    assert.deepEqual(shellCall(['bash', '-lc', 'cat a.ts']), {
      kind: 'read',
      path: 'a.ts',
      start: 1,
      shell: true,
    })
    assert.equal(shellCall("rg -n 'foo|bar' src").kind, 'grep')
    for (const ambiguous of [
      'cat a.ts | head',
      'cd x && cat a.ts',
      'cat a.ts > b',
      'cat $F',
      'cat a b',
      'tail -n 5 a',
      'cat *.ts',
      'ls',
    ]) {
      assert.equal(shellCall(ambiguous).kind, 'other', ambiguous)
    }
    assert.deepEqual(commandArgv(`grep -rn "a b" 'c d'`), ['grep', '-rn', 'a b', 'c d'])
  })
})
