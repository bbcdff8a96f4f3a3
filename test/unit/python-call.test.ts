/**
 * Python code that is one call of literal arguments (OpenHands V0's agent skills), and how the
 * OpenHands profile classifies such calls of its code tool.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { namedArguments, pythonCall } from '../../src/tools/python-call.js'
import { classifyCall, defaultProfile } from '../../src/tools/index.js'
import { resultFacts } from '../../src/pipeline/facts.js'

describe('pythonCall', () => {
  test('one call: positional and keyword literals, across lines, a trailing comma', () => {
    assert.deepEqual(pythonCall("open_file('/workspace/a.py')"), {
      name: 'open_file',
      positional: ['/workspace/a.py'],
      keywords: {},
    })
    assert.deepEqual(
      pythonCall('\nopen_file(\n  "/w/a.py",\n  line_number=40, context_lines = -1,\n)\n'),
      {
        name: 'open_file',
        positional: ['/w/a.py'],
        keywords: { line_number: 40, context_lines: -1 },
      },
    )
    assert.deepEqual(pythonCall('f(None, True, False, 1_000);'), {
      name: 'f',
      positional: [null, true, false, 1000],
      keywords: {},
    })
  })

  test('strings as Python reads them: escapes, triple quotes, raw strings, adjacent ones joined', () => {
    const value = (code: string) => pythonCall(code)?.positional[0]
    assert.equal(value(String.raw`f('a\tb\n\'c\' \x41\u00e9\101 \d')`), "a\tb\n'c' Aé" + 'A \\d')
    assert.equal(value('f("""line 1\n"quoted" line 2\n""")'), 'line 1\n"quoted" line 2\n')
    assert.equal(value("f('''it's''')"), "it's")
    assert.equal(value(String.raw`f(r'C:\new\'s')`), String.raw`C:\new\'s`)
    assert.equal(value('f("joined " \'here\')'), 'joined here')
    assert.equal(value('f("a\\\nb")'), 'ab', 'a backslash before a line break joins the lines')
    assert.equal(value("f(u'text')"), 'text')
  })

  test('anything more or else is not such a call', () => {
    for (const code of [
      'x = open_file("a")',
      'open_file("a"); open_file("b")',
      'open_file(path)',
      'open_file(f"{base}/a")',
      "open_file(b'a')",
      'open_file("a" + "b")',
      'open_file("unterminated)',
      "open_file('one\nline')",
      'open_file(a=1, 2)',
      'open_file(a=1, a=2)',
      'open_file("a") # comment',
      'print(open_file("a"))',
      'open_file("a"',
      'open_file("\\N{BULLET}")',
      'open_file(1.5)',
      'open_file(x == 1)',
      "open_file(__proto__='a')",
    ])
      assert.equal(pythonCall(code), undefined, code)
  })

  test('named arguments: positional ones take the names in order', () => {
    const call = pythonCall("edit('a.py', to_replace='x', new_content='y')")!
    assert.deepEqual(namedArguments(call, ['file_name', 'to_replace', 'new_content']), {
      file_name: 'a.py',
      to_replace: 'x',
      new_content: 'y',
    })
    assert.equal(namedArguments(pythonCall("f('a', 'b')")!, ['only']), undefined)
    assert.equal(namedArguments(pythonCall("f('a', only='b')")!, ['only']), undefined)
  })
})

describe("OpenHands V0's skills in execute_ipython_cell", () => {
  const classify = (code: string) =>
    classifyCall(defaultProfile, 'execute_ipython_cell', JSON.stringify({ code }), new Map())

  test('open_file is a read of its path; its window places the lines', () => {
    assert.deepEqual(classify("open_file('/workspace/src/App.css')"), {
      kind: 'read',
      path: '/workspace/src/App.css',
      start: 1,
    })
    assert.deepEqual(classify("open_file('/w/a.py', 120)"), {
      kind: 'read',
      path: '/w/a.py',
      start: 1,
    })
  })

  test('the edit skills are changes to their file; searches are listings named by their skill', () => {
    for (const code of [
      "edit_file_by_replace('/w/a.py', to_replace='x', new_content='y')",
      "insert_content_at_line('/w/a.py', 3, 'z')",
      "append_file('/w/a.py', 'z')",
      "create_file('/w/a.py')",
    ])
      assert.deepEqual(classify(code), { kind: 'write', path: '/w/a.py' }, code)
    assert.deepEqual(classify("search_dir('TODO', '/w')"), {
      kind: 'grep',
      name: 'execute_ipython_cell:search_dir',
      args: { search_term: 'TODO', dir_path: '/w' },
    })
    assert.deepEqual(classify("search_file('TODO')"), {
      kind: 'grep',
      name: 'execute_ipython_cell:search_file',
      args: { search_term: 'TODO' },
    })
    assert.deepEqual(classify("find_file('a.py')"), {
      kind: 'glob',
      name: 'execute_ipython_cell:find_file',
      args: { file_name: 'a.py' },
    })
  })

  test('other code, or a skill with no path, is code', () => {
    for (const code of ['print(1)', 'scroll_down()', 'goto_line(40)', 'open_file()', 'import os'])
      assert.deepEqual(classify(code), { kind: 'other' }, code)
  })

  test('a window inside the file, as later versions print it: the lines its numbers give', async () => {
    const lines = Array.from({ length: 100 }, (_, i) => `${51 + i}|line ${51 + i}`)
    const result = [
      '[File: /w/big.py (300 lines total)]',
      '(50 more lines above)',
      ...lines,
      '(150 more lines below)',
      '[Use `scroll_down` to view the next 100 lines of the file!]',
      '[Jupyter current working directory: /w]',
      '[Jupyter Python interpreter: /openhands/bin/python]',
    ].join('\n')
    const classified = classify("open_file('/w/big.py', line_number=100)")
    const views = { content: async () => undefined }
    const { call } = await resultFacts(classified, result, defaultProfile, undefined, views)
    assert.equal(call.kind, 'read')
    assert.deepEqual(call.kind === 'read' && [call.start, call.end, call.total, call.shown?.[0]], [
      51,
      150,
      300,
      'line 51',
    ])
    // A window the skill could not open is its error, not a read.
    const failed = await resultFacts(
      classified,
      'ERROR: File /w/big.py not found.\n[Jupyter current working directory: /w]',
      defaultProfile,
      undefined,
      views,
    )
    assert.equal(failed.call.kind, 'other')
  })
})
