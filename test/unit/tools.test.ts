import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import {
  classifyCall,
  commandArgv,
  defaultProfile,
  parsePatch,
  searchReplaceBlocks,
  shellCall,
  shownLines,
  splitTrailer,
} from '../../src/tools/index.js'
import { resultFacts, type FileViews } from '../../src/pipeline/facts.js'
import { createWorkspace } from '../../src/workspace/index.js'
import type { ToolDefinition } from '../../src/wire/chat.js'
import { makeProject } from '../helpers/workspace.js'

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
    assert.equal(classifyCall(defaultProfile, 'Bash', '{"command":"wc -l a"}', none).kind, 'other')
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
    assert.deepEqual(shownLines('00001| a\n00002| b'), { start: 1, lines: ['a', 'b'] })
    assert.deepEqual(shownLines('3: x\n4: y\n'), { start: 3, lines: ['x', 'y'] })
    assert.deepEqual(shownLines('  9 | a\n 10 | b'), { start: 9, lines: ['a', 'b'] })
    assert.deepEqual(shownLines('L1: a'), { start: 1, lines: ['a'] })
  })
  test('raw text is the lines themselves; numbering that does not run on is not raw text', () => {
    assert.deepEqual(shownLines('plain\ntext\n'), { lines: ['plain', 'text'] })
    assert.deepEqual(shownLines('1: a\n3: b'), { lines: ['1: a', '3: b'], garbled: true })
    // A notice line the table does not know, before numbered lines.
    assert.equal(shownLines('[note] see below\n1 | a\n2 | b').garbled, true)
  })
  test("a final empty numbered line stands for the file's final newline, unless a length counts it", () => {
    assert.deepEqual(shownLines('     1→a\n     2→'), { start: 1, lines: ['a'] })
    assert.deepEqual(shownLines('1 | a\n2 | ', [], { realFinalEmpty: true }), {
      start: 1,
      lines: ['a', ''],
    })
    const cline = [{ pattern: /^(?<body>[\s\S]*?)\n\n\(File has (?<total>\d+) lines total\.\)$/ }]
    assert.deepEqual(shownLines('1 | a\n2 | \n\n(File has 2 lines total.)', cline), {
      start: 1,
      lines: ['a', ''],
      total: 2,
    })
    assert.deepEqual(shownLines('plain\n\n'), { lines: ['plain', ''] }, 'raw text keeps it')
  })
  test('a cut body loses its partial last line and is marked cut', () => {
    const cut = [{ pattern: /^(?<body>[\s\S]*?)<cut>$/, cut: true }]
    assert.deepEqual(shownLines('1\ta\n2\tb is parti<cut>', cut), {
      start: 1,
      lines: ['a'],
      cut: true,
    })
    assert.deepEqual(shownLines('1\ta\n2\tb\n<cut>', cut), {
      start: 1,
      lines: ['a', 'b'],
      cut: true,
    })
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
  test("Qwen Code's partial-read header gives the range, and says the file goes on", () => {
    const text = 'Showing lines 101-102 of 302 total lines.\n\n---\n\nfoo\nbar'
    assert.deepEqual(shownLines(text, defaultProfile.envelopes), {
      start: 101,
      lines: ['foo', 'bar'],
      cut: true,
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
        hunks: [
          { before: ['keep', 'old'], after: ['keep', 'new'], atEnd: false, anchor: 'function f' },
        ],
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

  test('shell reads and searches are recognised only when the command says so', () => {
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
      numbered: true,
    })
    assert.deepEqual(shellCall(['bash', '-lc', 'cat a.ts']), {
      kind: 'read',
      path: 'a.ts',
      start: 1,
      shell: true,
    })
    assert.equal(shellCall("rg -n 'foo|bar' src").kind, 'grep')
    // Pipelines, `cd DIR &&` and tail: test/unit/shell-reads.test.ts.
    for (const ambiguous of ['cat a.ts > b', 'cat $F', 'cat a b', 'cat *.ts', 'ls | wc -l']) {
      assert.equal(shellCall(ambiguous).kind, 'other', ambiguous)
    }
    assert.deepEqual(shellCall('ls -la src'), {
      kind: 'list',
      name: 'shell',
      args: { argv: ['ls', '-la', 'src'] },
    })
    assert.deepEqual(commandArgv(`grep -rn "a b" 'c d'`), ['grep', '-rn', 'a b', 'c d'])
  })
})

describe('rules that share a name, lists of one, JSON results, inserts', () => {
  test("the rule whose range arguments the call gives wins (Cline's and Roo's read_file)", () => {
    assert.deepEqual(
      classifyCall(defaultProfile, 'read_file', '{"path":"a.ts","offset":5,"limit":4}', none),
      { kind: 'read', path: 'a.ts', start: 5, end: 8 },
    )
    assert.deepEqual(
      classifyCall(
        defaultProfile,
        'read_file',
        '{"path":"a.ts","start_line":5,"end_line":8}',
        none,
      ),
      { kind: 'read', path: 'a.ts', start: 5, end: 8 },
    )
    assert.deepEqual(classifyCall(defaultProfile, 'read_file', '{"path":"a.ts"}', none), {
      kind: 'read',
      path: 'a.ts',
      start: 1,
    })
  })

  test('Cline 4: one file of read_files is a read, one command of run_commands a shell call; both in JSON', () => {
    const entries = { text: 'result', ok: 'success', list: true }
    assert.deepEqual(
      classifyCall(
        defaultProfile,
        'read_files',
        '{"files":[{"path":"/a.ts","start_line":2,"end_line":3}]}',
        none,
      ),
      { kind: 'read', path: '/a.ts', start: 2, end: 3, realFinalEmpty: true, json: entries },
    )
    assert.deepEqual(
      classifyCall(
        defaultProfile,
        'read_files',
        '{"files":[{"path":"/a"},{"path":"/b","start_line":5,"end_line":9}]}',
        none,
      ),
      {
        kind: 'reads',
        files: [
          { kind: 'read', path: '/a', start: 1, realFinalEmpty: true, json: entries },
          { kind: 'read', path: '/b', start: 5, end: 9, realFinalEmpty: true, json: entries },
        ],
        json: entries,
      },
      'two files in one answer: each a read of its own',
    )
    assert.equal(
      classifyCall(defaultProfile, 'read_files', '{"files":[{"path":"/a"},{"line":3}]}', none).kind,
      'other',
      'a file without a path: no reads',
    )
    assert.deepEqual(
      classifyCall(defaultProfile, 'run_commands', '{"commands":["cat a.ts"]}', none),
      { kind: 'read', path: 'a.ts', start: 1, shell: true, json: entries },
    )
    assert.equal(
      classifyCall(defaultProfile, 'run_commands', '{"commands":["cat a.ts","cat b.ts"]}', none)
        .kind,
      'other',
    )
  })

  test('inserts: after line N (OpenHands, Goose) or before the 1-based line N (Cline 4)', () => {
    const openHands = classifyCall(
      defaultProfile,
      'str_replace_editor',
      '{"command":"insert","path":"/a","insert_line":2,"new_str":"x"}',
      none,
    )
    assert.deepEqual(openHands, {
      kind: 'edit',
      path: '/a',
      replacements: [{ insert: 'x', at: 2 }],
    })
    const cline4 = classifyCall(
      defaultProfile,
      'editor',
      '{"path":"/a","new_text":"x","insert_line":1}',
      none,
    )
    assert.deepEqual(cline4, {
      kind: 'edit',
      path: '/a',
      replacements: [{ insert: 'x', at: 0 }],
      json: { text: 'result', ok: 'success' },
    })
    assert.deepEqual(
      classifyCall(defaultProfile, 'editor', '{"path":"/n","new_text":"v\\n"}', none),
      { kind: 'write', path: '/n', content: 'v\n', json: { text: 'result', ok: 'success' } },
      'without old_text the editor creates the file',
    )
  })
})

describe('resultFacts: what the samples do not show', () => {
  const before = 'const a = 1\nconst b = "x"\n'
  const views: FileViews = { content: async (p) => (p === 'src/a.ts' ? before : undefined) }
  // As the pipeline does: the agent's trailer (Claude Code's reminders) is split off first.
  const facts = async (name: string, args: object, text: string) =>
    (
      await resultFacts(
        classifyCall(defaultProfile, name, JSON.stringify(args), none),
        splitTrailer(text, defaultProfile.trailers).body,
        defaultProfile,
        undefined,
        views,
      )
    ).call

  // Claude Code 2.1.332, as the CLI sent them (captured through the proxy).
  const REMINDER =
    '\n\n<system-reminder>\n<total_tokens>14999840 tokens left</total_tokens>\n</system-reminder>'
  test('Claude Code 2.1.332: a full read of a file ending in a newline, its last `N\\t` trimmed to `N`', async () => {
    const split = splitTrailer(
      '1\tconst a = 1\n2\tconst b = "x"\n3' + REMINDER,
      defaultProfile.trailers,
    )
    assert.deepEqual(split, { body: '1\tconst a = 1\n2\tconst b = "x"\n3', trailer: REMINDER })
    const shown = shownLines(split.body, defaultProfile.envelopes)
    assert.deepEqual(shown, { start: 1, lines: ['const a = 1', 'const b = "x"'] })
    const call = await facts(
      'Read',
      { file_path: 'src/a.ts' },
      '1\tconst a = 1\n2\tconst b = "x"\n3' + REMINDER,
    )
    assert.equal(call.kind, 'read')
    if (call.kind !== 'read') return
    assert.deepEqual([call.start, call.end], [1, 2])
    // Only as the last line, and only when the numbering runs on.
    assert.equal(shownLines('1\ta\n3').garbled, true)
    assert.equal(shownLines('1\ta\n2\n3\tb').garbled, true)
    assert.equal(shownLines('2').garbled, undefined)
  })
  test('Claude Code 2.1.332: the Edit success sentence with its "no need to Read it back" tail', async () => {
    const call = await facts(
      'Edit',
      {
        file_path: 'src/a.ts',
        old_string: 'const a = 1',
        new_string: 'const a = 2',
        replace_all: false,
      },
      'The file src/a.ts has been updated successfully. (file state is current in your context — no need to Read it back)' +
        "\n\n<system-reminder>\nThe task tools haven't been used recently.\n\n</system-reminder>" +
        REMINDER,
    )
    assert.equal(call.kind, 'edit')
    if (call.kind !== 'edit') return
    assert.equal(call.before, before)
    assert.equal(call.after, 'const a = 2\nconst b = "x"\n')
  })

  test("Cline: the saved file it echoes is the content after, a formatter's changes included", async () => {
    const call = await facts(
      'replace_in_file',
      {
        path: 'src/a.ts',
        diff: '------- SEARCH\nconst a = 1\n=======\nconst a = 2\n+++++++ REPLACE',
      },
      "[replace_in_file for 'src/a.ts'] Result:\nThe content was successfully saved to src/a.ts.\n\n" +
        'Here is the full, updated content of the file that was saved:\n\n' +
        `<final_file_content path="src/a.ts">\nconst a = 2;\nconst b = 'x';\n\n</final_file_content>\n\n` +
        'IMPORTANT: For any future changes to this file, use the final_file_content shown above as your reference.\n\n' +
        '\n\nNew problems detected after saving the file:\nsrc/a.ts\n- [ts Error] Line 1: x',
    )
    assert.equal(call.kind, 'edit')
    if (call.kind !== 'edit') return
    assert.equal(call.before, before)
    assert.equal(call.after, "const a = 2;\nconst b = 'x';\n")
    assert.equal(
      call.note,
      'New problems detected after saving the file:\nsrc/a.ts\n- [ts Error] Line 1: x',
    )
  })

  test('a change the user edited, or a partial multi-edit, touches its file but is not derived', async () => {
    const roo = await facts(
      'write_to_file',
      { path: 'src/a.ts', content: 'x\n' },
      '{"path":"src/a.ts","operation":"modified","notice":"…","user_edits":"@@ -1 +1 @@\\n-x\\n+y"}',
    )
    assert.deepEqual(roo, { kind: 'other', touches: ['src/a.ts'] })
    const crush = await facts(
      'multiedit',
      {
        file_path: 'src/a.ts',
        edits: [
          { old_string: 'const a = 1', new_string: 'const a = 2' },
          { old_string: 'nope', new_string: 'x' },
        ],
      },
      '<result>\nApplied 1 of 2 edits to file: src/a.ts (1 edit(s) failed)\n</result>\n',
    )
    assert.deepEqual(crush, { kind: 'other', touches: ['src/a.ts'] })
  })

  test("a shell read inside an agent's wrapper is a read only when the run succeeded in full", async () => {
    const cat = { command: 'cat src/a.ts' }
    const lines = 'const a = 1\nconst b = "x"\n'
    const ok = [
      ['bash', lines + '\n\n<cwd>/p</cwd>'], // Crush
      [
        'terminal',
        lines +
          '[The command completed with exit code 0.]\n[Current working directory: /p]\n[Command finished with exit code 0]',
      ], // OpenHands
      ['run_terminal_command', lines + '\n[Status: Command completed]'], // Continue
      ['developer__shell', lines.trimEnd()], // Goose 2026
    ] as const
    for (const [name, text] of ok) {
      const call = await facts(name, cat, text)
      assert.equal(call.kind, 'read', name)
      if (call.kind === 'read') assert.deepEqual([call.start, call.end], [1, 2], name)
    }
    const failed = [
      ['bash', 'cat: src/a.ts: No such file or directory\nExit code 1\n\n<cwd>/p</cwd>'],
      ['bash', 'no output'],
      [
        'terminal',
        'cat: x\n[The command completed with exit code 1.]\n[Current working directory: /p]\n[Command finished with exit code 1]',
      ],
      [
        'terminal',
        'a\n[... Observation truncated due to length ...]\nb\n[The command completed with exit code 0.]\n[Current working directory: /p]\n[Command finished with exit code 0]',
      ],
      ['run_terminal_command', 'x\n\n[Status: Command failed with exit code 1]'],
      ['developer__shell', 'x\n\nCommand exited with code 1'],
      [
        'developer__shell',
        '2451\n\n[Output exceeded 2000 line limit (2500 lines total). Full output saved to /tmp/x.]',
      ],
      ['developer__shell', '(no output)'],
    ] as const
    for (const [name, text] of failed)
      assert.deepEqual(await facts(name, cat, text), { kind: 'other' }, text)
  })

  test('Cline 4: a result cut in the middle is a read of its head, never the whole file', async () => {
    const text = JSON.stringify([
      {
        query: 'src/a.ts',
        result: '1 | a\n2 | b\n3 | par\n\n...[truncated 9000 chars]...\n\nrt\n999 | z',
        success: true,
      },
    ])
    const result = await resultFacts(
      classifyCall(defaultProfile, 'read_files', '{"files":[{"path":"src/a.ts"}]}', none),
      text,
      defaultProfile,
      undefined,
      views,
    )
    assert.equal(result.call.kind, 'read')
    if (result.call.kind === 'read') assert.deepEqual([result.call.start, result.call.end], [1, 2])
    assert.equal(result.views, undefined)
  })

  test('workspace mode: an empty read matches only an empty file', async () => {
    const workspace = await createWorkspace([makeProject()])
    const empty =
      '<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>'
    const read = (path: string) =>
      resultFacts(
        classifyCall(defaultProfile, 'Read', JSON.stringify({ file_path: path }), none),
        empty,
        defaultProfile,
        workspace,
        views,
      )
    const notes = (await read('notes.txt')).call
    assert.equal(notes.kind, 'read')
    if (notes.kind === 'read') assert.equal(notes.file?.lines, 0)
    // util.ts is not empty: the reminder is of another moment, so only what it says is known.
    const util = (await read('util.ts')).call
    assert.equal(util.kind, 'read')
    if (util.kind === 'read') assert.deepEqual([util.file, util.total], [undefined, 0])
  })
})

describe('splitTrailer: what an agent appends after any tool output', () => {
  const trailers = defaultProfile.trailers
  const block = (inside: string) => `<system-reminder>\n${inside}\n</system-reminder>`
  test('peels every block at the end, last first, with the white space before them', () => {
    const tail = `\n\n${block('a')}\n\n${block('tokens left')}\n`
    assert.deepEqual(splitTrailer('out\nput' + tail, trailers), { body: 'out\nput', trailer: tail })
  })
  test('a block inside the output, or text after the last block, is the output', () => {
    const inner = `before\n${block('x')}\nafter`
    assert.deepEqual(splitTrailer(inner, trailers), { body: inner, trailer: '' })
    assert.deepEqual(splitTrailer('plain output\n', trailers), {
      body: 'plain output\n',
      trailer: '',
    })
  })
  test('a result that is only blocks is its first; an unopened close is output', () => {
    const only = block('Warning: the file exists but the contents are empty.')
    assert.deepEqual(splitTrailer(only, trailers), { body: only, trailer: '' })
    // Claude Code on most models: its own reminders after the tool's (tokens left, a nudge).
    const tail = `\n\n${block('nudge')}\n\n${block('tokens left')}`
    assert.deepEqual(splitTrailer(only + tail, trailers), { body: only, trailer: tail })
    const broken = 'x\n</system-reminder>'
    assert.deepEqual(splitTrailer(broken, trailers), { body: broken, trailer: '' })
  })
  test('no trailers in the profile: nothing is split', () => {
    const text = 'x\n' + block('y')
    assert.deepEqual(splitTrailer(text, []), { body: text, trailer: '' })
  })
})

describe('drift: a known tool answered unlike its profile is reported', () => {
  const views: FileViews = { content: async () => undefined }
  const facts = (name: string, args: object, text: string) =>
    resultFacts(
      classifyCall(defaultProfile, name, JSON.stringify(args), new Map()),
      text,
      defaultProfile,
      undefined,
      views,
    )
  const edit = { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' }
  test('an edit answered in words no profile knows, and not as a failure', async () => {
    const changed = await facts('Edit', edit, 'Changed src/a.ts as asked.')
    assert.deepEqual(changed, { call: { kind: 'other' }, unrecognised: 'a success answer' })
  })
  test('a failed edit is a failure, not drift; a success is neither', async () => {
    for (const text of [
      '<tool_use_error>String to replace not found in file.</tool_use_error>',
      'Error: oldString not found in content',
      'File has not been read yet. Read it first before writing to it.',
    ])
      assert.equal((await facts('Edit', edit, text)).unrecognised, undefined, text)
  })
  test('a read whose numbering does not run on; a shell read owes nothing', async () => {
    const read = await facts('Read', { file_path: 'src/a.ts' }, '1\ta\n2\tb\n7\tc')
    assert.deepEqual(read, { call: { kind: 'other' }, unrecognised: 'lines numbered in one run' })
    const shell = await facts('Bash', { command: 'cat -n src/a.ts' }, '     1\ta\n     7\tb')
    assert.equal(shell.unrecognised, undefined)
  })
})

describe("Codex 0.171: apply_patch through exec_command, and its wrappers' volatile lines", () => {
  const patch =
    '*** Begin Patch\n*** Update File: src/a.ts\n@@\n-const a = 1\n+const a = 2\n*** End Patch'
  test('a heredoc or an argument to apply_patch is a patch; anything around it is not', () => {
    for (const command of [
      `apply_patch <<'EOF'\n${patch}\nEOF`,
      `apply_patch <<EOF\n${patch}\nEOF\n`,
      ['apply_patch', patch],
      ['bash', '-lc', `apply_patch <<'PATCH'\n${patch}\nPATCH`],
    ]) {
      const call = shellCall(command)
      assert.equal(call.kind, 'patch', JSON.stringify(command))
      if (call.kind === 'patch')
        assert.deepEqual([call.shell, call.files[0]?.path], [true, 'src/a.ts'])
    }
    assert.equal(shellCall(`apply_patch <<'EOF'\n${patch}\nEOF\necho done`).kind, 'other')
    assert.equal(shellCall(`cat x; apply_patch <<'EOF'\n${patch}\nEOF`).kind, 'other')
  })
  test("its answer inside exec_command's two wrappers is a success; a failed run is neither", async () => {
    const views: FileViews = { content: async () => 'const a = 1\n' }
    const facts = (text: string) =>
      resultFacts(
        classifyCall(
          defaultProfile,
          'exec_command',
          JSON.stringify({ cmd: `apply_patch <<'EOF'\n${patch}\nEOF` }),
          new Map(),
        ),
        text,
        defaultProfile,
        undefined,
        views,
      )
    const ok = await facts(
      'Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM src/a.ts\n',
    )
    assert.equal(ok.call.kind, 'patch')
    const failed = await facts(
      'Wall time: 0.0000 seconds\nOutput:\nExit code: 1\nWall time: 0 seconds\nOutput:\nerror: no match\n',
    )
    assert.deepEqual(failed, { call: { kind: 'other' } })
  })
  test("run with a workdir, its paths are the workdir's files; the diff names them as given", async () => {
    const project = makeProject()
    mkdirSync(join(project, 'src'))
    writeFileSync(join(project, 'src', 'a.ts'), 'const a = 2\n') // as the patch left it
    writeFileSync(join(project, 'a.ts'), 'unrelated\n') // the same name at the root
    const facts = await resultFacts(
      classifyCall(
        defaultProfile,
        'exec_command',
        JSON.stringify({
          cmd: `apply_patch <<'EOF'\n${patch.replace('src/a.ts', 'a.ts')}\nEOF`,
          workdir: join(project, 'src'),
        }),
        new Map(),
      ),
      'Chunk ID: 3af7c3\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 9\nOutput:\nSuccess. Updated the following files:\nM a.ts\n',
      defaultProfile,
      await createWorkspace([project]),
      { content: async () => undefined },
    )
    assert.equal(facts.call.kind, 'patch')
    if (facts.call.kind === 'patch')
      assert.deepEqual(
        facts.call.files.map((f) => [f.path, f.absPath, f.before, f.after]),
        [['a.ts', join(project, 'src', 'a.ts'), 'const a = 1\n', 'const a = 2\n']],
      )
  })
  test('a listing compares the output inside the wrapper, not its chunk id', async () => {
    const listing = (chunk: string) =>
      resultFacts(
        classifyCall(defaultProfile, 'exec_command', JSON.stringify({ cmd: 'ls src' }), new Map()),
        `Chunk ID: ${chunk}\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 4\nOutput:\nbig.ts\nutil.ts\n`,
        defaultProfile,
        undefined,
        { content: async () => undefined },
      )
    const [a, b] = [await listing('3af7c3'), await listing('4d352e')]
    assert.equal(a.call.kind, 'listing')
    if (a.call.kind === 'listing' && b.call.kind === 'listing')
      assert.deepEqual([a.call.output, b.call.output], ['big.ts\nutil.ts\n', 'big.ts\nutil.ts\n'])
  })
})
