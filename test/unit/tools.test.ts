import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { classifyCall, generic, shownLines } from '../../src/tools/index.js'
import type { ToolDefinition } from '../../src/wire/chat.js'

const none = new Map<string, ToolDefinition>()

describe('classifyCall (generic profile)', () => {
  test('reads normalise their ranges to 1-based inclusive lines', () => {
    assert.deepEqual(classifyCall(generic, 'Read', '{"file_path":"/a.ts","offset":50,"limit":31}', none), { kind: 'read', path: '/a.ts', start: 50, end: 80 })
    assert.deepEqual(classifyCall(generic, 'read', '{"filePath":"/a.ts"}', none), { kind: 'read', path: '/a.ts', start: 1 })
    assert.deepEqual(classifyCall(generic, 'read_file', '{"path":"a.ts","start_line":3,"end_line":9}', none), { kind: 'read', path: 'a.ts', start: 3, end: 9 })
    assert.deepEqual(
      classifyCall(generic, 'str_replace_editor', '{"command":"view","path":"/a.ts","view_range":[5,-1]}', none),
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
                offset: { type: 'number', description: "Optional: For text files, the 0-based line number to start reading from. Requires 'limit' to be set." },
                limit: { type: 'number' },
              },
            },
          },
        },
      ],
    ])
    assert.deepEqual(classifyCall(generic, 'read_file', '{"file_path":"/a.ts","offset":0,"limit":10}', qwen), { kind: 'read', path: '/a.ts', start: 1, end: 10 })
  })

  test('listings and searches keep their arguments; the rest is other', () => {
    assert.deepEqual(classifyCall(generic, 'Glob', '{"pattern":"*.ts"}', none), { kind: 'glob', name: 'Glob', args: { pattern: '*.ts' } })
    assert.equal(classifyCall(generic, 'grep_search', '{"pattern":"x"}', none).kind, 'grep')
    assert.equal(classifyCall(generic, 'Bash', '{"command":"ls"}', none).kind, 'other')
    assert.equal(classifyCall(generic, 'Read', 'not json', none).kind, 'other')
    assert.equal(classifyCall(generic, 'Read', '{"offset":3}', none).kind, 'other', 'a read without a path')
    assert.deepEqual(classifyCall(generic, 'str_replace_editor', '{"command":"create","path":"/a"}', none), { kind: 'write', path: '/a' })
    assert.deepEqual(classifyCall(generic, 'edit', '{"filePath":"/a","oldString":"x","newString":"y"}', none), { kind: 'write', path: '/a' })
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
    const text = '<path>/p/u.ts</path>\n<type>file</type>\n<content>\n1: a\n2: b\n\n(End of file - total 2 lines)\n</content>'
    assert.deepEqual(shownLines(text, generic.envelopes), { start: 1, lines: ['a', 'b'], total: 2 })
    const part = '<path>/p/u.ts</path>\n<type>file</type>\n<content>\n101: x\n\n(Showing lines 101-101 of 301. Use offset=102 to continue.)\n</content>'
    assert.deepEqual(shownLines(part, generic.envelopes), { start: 101, lines: ['x'], total: 301 })
  })
  test("opencode's directory read is a listing", () => {
    const text = '<path>/p/src</path>\n<type>directory</type>\n<entries>\na.ts\n\n(1 entries)\n</entries>'
    assert.equal(shownLines(text, generic.envelopes).kind, 'list')
  })
  test("Qwen Code's partial-read header gives the range", () => {
    const text = 'Showing lines 101-102 of 302 total lines.\n\n---\n\nfoo\nbar'
    assert.deepEqual(shownLines(text, generic.envelopes), { start: 101, lines: ['foo', 'bar'] })
  })
  test("agents' own placeholders are recognised", () => {
    const qwen = '[File src/big.ts unchanged since last read in this session — the full content was provided earlier in this conversation.]'
    for (const text of [qwen, '[Old tool result content cleared]', 'File unchanged since last read. The content from the earlier Read tool_result in this conversation is still current — refer to that instead of re-reading.']) {
      assert.ok(generic.agentStubs.some((stub) => stub.test(text)), text)
    }
  })
})
