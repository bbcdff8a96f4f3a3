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
    assert.equal(classifyCall(generic, 'str_replace_editor', '{"command":"create","path":"/a"}', none).kind, 'other')
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
