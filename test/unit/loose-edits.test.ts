/**
 * Edits a tool matched loosely, captured from the real CLIs (workspace mode): the Continue CLI
 * 1.5.47's Edit and MultiEdit (trimmed, case-insensitive, whitespace-ignored matches) and the
 * Cline CLI 3.0.65's apply_patch with a fuzz factor. The diff must be the change on disk, or the
 * tool's own answer stays; and cn's own edit errors are failures, not unknown answers.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { resultFacts, type FileViews } from '../../src/pipeline/facts.js'
import { classifyCall, defaultProfile } from '../../src/tools/index.js'
import { createWorkspace } from '../../src/workspace/index.js'

async function facts(
  name: string,
  args: object,
  answer: string,
  before: string,
  after: string,
  viewed: string | undefined,
) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'loose-')))
  writeFileSync(join(root, 'f.ts'), after)
  void before
  const views: FileViews = { content: async () => viewed }
  const classified = classifyCall(defaultProfile, name, JSON.stringify(args), new Map())
  return resultFacts(classified, answer, defaultProfile, await createWorkspace([root]), views)
}

const cnAnswer = (path: string, diff: string) =>
  `Successfully edited ${path}\nDiff:\nIndex: ${path}\n===================================================================\n--- ${path}\n+++ ${path}\n${diff}`

for (const [label, old, nu, before, after] of [
  [
    'case-insensitive',
    'CONST Z = 3;',
    'const z = 30;',
    'const x = 1;\nconst z = 3;\n',
    'const x = 1;\nconst z = 30;\n',
  ],
  [
    'trimmed',
    'return 1;  ',
    'return 2;',
    'function f() {\n  return 1;\n}\n',
    'function f() {\n  return 2;\n}\n',
  ],
  [
    'whitespace-ignored (CRLF)',
    'BETA\ngamma',
    'b2\ng2',
    'alpha\r\nBETA\r\ngamma\r\n',
    'alpha\r\nb2\ng2\r\n',
  ],
] as const) {
  test(`cn Edit matched ${label}: the file as read, else the tool's answer`, async () => {
    const args = { file_path: 'f.ts', old_string: old, new_string: nu }
    const answer = cnAnswer('/p/f.ts', '@@ -1,3 +1,3 @@\n')
    // The model read the file: the loose match cannot be replayed on it, so no derived diff.
    const seen = await facts('Edit', args, answer, before, after, before)
    assert.equal(seen.call.kind, 'other')
    assert.equal(seen.unrecognised, undefined)
    assert.ok('touches' in seen.call && seen.call.touches?.length === 1)
    // Not read: nothing to undo from.
    const unseen = await facts('Edit', args, answer, before, after, undefined)
    assert.equal(unseen.call.kind, 'other')
  })
}

test('cn Edit and MultiEdit matched exactly: the diff from the file as read', async () => {
  const before = 'let a = 1;\nlog(a);\nlog(a);\n'
  const after = 'let a = 10;\nprint(a);\nprint(a);\n'
  const args = {
    file_path: 'f.ts',
    edits: [
      { old_string: 'let a = 1;', new_string: 'let a = 10;' },
      { old_string: 'log(a);', new_string: 'print(a);', replace_all: true },
    ],
  }
  const f = await facts(
    'MultiEdit',
    args,
    cnAnswer('/p/f.ts with 2 edits', ''),
    before,
    after,
    before,
  )
  assert.equal(f.call.kind, 'edit')
  assert.ok(f.call.kind === 'edit' && f.call.before === before && f.call.after === after)
})

test("cn's own edit errors are failures", async () => {
  for (const answer of [
    'Edit at index 0: String "foo();" appears 2 times in the file. Either provide a more specific string with surrounding context to make it unique, or use replace_all=true to replace all occurrences.',
    'You must use the Read tool to read src/x.ts before editing it.',
    'old_string and new_string must be different',
  ]) {
    const f = await facts(
      'Edit',
      { file_path: 'f.ts', old_string: 'foo();', new_string: 'baz();' },
      answer,
      'x\n',
      'x\n',
      'x\n',
    )
    assert.equal(f.call.kind, 'other', answer)
    assert.equal(f.unrecognised, undefined, answer)
  }
})

test("Cline 4's apply_patch with a fuzz factor: touched, never a diff", async () => {
  // Captured: "-const   y = 2;" matched line 1 ("const x = 1;") at fuzz 1000.
  const input =
    '*** Begin Patch\n*** Update File: f.ts\n@@\n-const   y = 2;\n+const y = 20;\n*** End Patch'
  const answer = JSON.stringify({
    query: 'apply_patch',
    result:
      'Successfully applied patch to the following files:\n/p/f.ts\nNote: Patch applied with fuzz factor 1000',
    success: true,
  })
  const before = 'const x = 1;\nconst y = 2;\nconst z = 3;\n'
  const after = 'const y = 20;\nconst y = 2;\nconst z = 3;\n'
  const f = await facts('apply_patch', { input }, answer, before, after, before)
  assert.equal(f.call.kind, 'other')
  assert.ok('touches' in f.call && f.call.touches?.length === 1)
})

// opencode's (and Kilo's) edit falls back to trimmed lines, white space, indentation, escapes
// and block anchors; Qwen Code's corrects quotes and escapes: the same rule.
for (const [agent, name, args, answer] of [
  [
    'opencode',
    'edit',
    { filePath: 'f.ts', oldString: 'return 1;  ', newString: 'return 2;' },
    'Edit applied successfully.',
  ],
  [
    'Qwen Code',
    'edit',
    { file_path: 'f.ts', old_string: 'return 1;  ', new_string: 'return 2;' },
    'The file: f.ts has been updated. Showing lines 1-3 of 3 from the edited file:\n\n---\n\nfunction f() {\n  return 2;\n}',
  ],
] as const) {
  test(`${agent}'s edit matched loosely: no diff undone from the file after`, async () => {
    const before = 'function f() {\n  return 1;\n}\n'
    const after = 'function f() {\n  return 2;\n}\n'
    // Undone from the file after, the diff would claim `-  return 1;  ` was in the file.
    const seen = await facts(name, args, answer, before, after, before)
    assert.equal(seen.call.kind, 'other')
    // Matched exactly, the same edit is its diff, from the file as read.
    const exact = {
      ...args,
      ...('oldString' in args ? { oldString: 'return 1;' } : { old_string: 'return 1;' }),
    }
    const derived = await facts(name, exact, answer, before, after, before)
    assert.equal(derived.call.kind, 'edit')
    if (derived.call.kind === 'edit')
      assert.deepEqual([derived.call.before, derived.call.after], [before, after])
  })
}
