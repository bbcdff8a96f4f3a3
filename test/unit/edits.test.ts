import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  applyHunks,
  applyReplacements,
  undoHunks,
  undoReplacements,
} from '../../src/pipeline/edits.js'
import type { PatchHunk } from '../../src/tools/index.js'

const file = 'a\nb\nc\nd\n'

describe('replacements', () => {
  test('apply once, or everywhere with all; refuse missing or ambiguous text', () => {
    assert.equal(applyReplacements(file, [{ old: 'b\n', new: 'B\n', all: false }]), 'a\nB\nc\nd\n')
    assert.equal(applyReplacements('x x', [{ old: 'x', new: 'y', all: true }]), 'y y')
    assert.equal(applyReplacements('x x', [{ old: 'x', new: 'y', all: false }]), undefined)
    assert.equal(applyReplacements(file, [{ old: 'zz', new: 'y', all: false }]), undefined)
  })
  test('undo gives the content before, checked by redoing; ambiguous undo refuses', () => {
    const edits = [
      { old: 'b', new: 'BB', all: false },
      { old: 'd', new: 'DD', all: false },
    ]
    assert.equal(undoReplacements('a\nBB\nc\nDD\n', edits), file)
    assert.equal(undoReplacements('BB BB', [{ old: 'b', new: 'BB', all: false }]), undefined)
    assert.equal(
      undoReplacements('x', [{ old: 'a', new: '', all: false }]),
      undefined,
      'a deletion cannot be placed',
    )
  })
})

describe('inserts', () => {
  test('lines go after the first `at` lines; a final newline in the text is an empty line', () => {
    assert.equal(applyReplacements(file, [{ insert: 'x', at: 0 }]), 'x\na\nb\nc\nd\n')
    assert.equal(applyReplacements(file, [{ insert: 'x\ny', at: 2 }]), 'a\nb\nx\ny\nc\nd\n')
    assert.equal(applyReplacements(file, [{ insert: 'x\n', at: 4 }]), 'a\nb\nc\nd\nx\n\n')
    assert.equal(applyReplacements('', [{ insert: 'x', at: 0 }]), 'x\n')
    assert.equal(applyReplacements(file, [{ insert: 'x', at: 5 }]), undefined, 'past the end')
  })
  test('undo takes the inserted lines out where they stand, checked by redoing', () => {
    assert.equal(undoReplacements('a\nb\nx\nc\nd\n', [{ insert: 'x', at: 2 }]), file)
    assert.equal(undoReplacements('a\nb\nc\nd\n', [{ insert: 'x', at: 2 }]), undefined)
  })
})

describe('patch hunks', () => {
  const hunks = [{ before: ['b', 'c'], after: ['b', 'C', 'c2'], atEnd: false }]
  test('apply and undo', () => {
    assert.equal(applyHunks(file, hunks), 'a\nb\nC\nc2\nd\n')
    assert.equal(undoHunks('a\nb\nC\nc2\nd\n', hunks), file)
    assert.equal(applyHunks('x\n', hunks), undefined)
  })
})

/** Texts of Codex CLI 0.171's apply_patch, captured: the files before and after on disk. */
describe('patch hunks as Codex 0.171 applies them', () => {
  const hunk = (before: string[], after: string[], more: Partial<PatchHunk> = {}): PatchHunk => ({
    before,
    after,
    atEnd: false,
    ...more,
  })
  test('a `@@ def b():` anchor: the hunk is below it, not at the first match', () => {
    const hunks = [hunk(['    return 1'], ['    return 2'], { anchor: 'def b():' })]
    const before = 'def a():\n    return 1\n\n\ndef b():\n    return 1\n'
    const after = 'def a():\n    return 1\n\n\ndef b():\n    return 2\n'
    assert.equal(applyHunks(before, hunks), after)
    assert.equal(undoHunks(after, hunks), before)
    assert.equal(applyHunks('def a():\n    return 1\n', hunks), undefined, 'no anchor line')
  })
  test('undo never guesses between two places the new lines stand', () => {
    // a returned 2 already; the patch changed b: either `return 2` could be the changed line.
    const after = 'def a():\n    return 2\n\n\ndef b():\n    return 2\n'
    assert.equal(undoHunks(after, [hunk(['    return 1'], ['    return 2'])]), undefined)
    const anchored = [hunk(['    return 1'], ['    return 2'], { anchor: 'def b():' })]
    assert.equal(undoHunks(after, anchored), undefined)
    // Codex matched loosely (trailing white space): the exact new lines elsewhere are no proof.
    const loose = 'def f():  \n    return 2\ndef f():\n    return 2\n'
    assert.equal(
      undoHunks(loose, [hunk(['def f():', '    return 1'], ['def f():', '    return 2'])]),
      undefined,
    )
  })
  test('a hunk that only adds lines goes at the end of the file', () => {
    const hunks = [hunk([], ['export const p4 = 4'])]
    const before = 'export const p1 = 1\nexport const p2 = 2\nexport const p3 = 3\n'
    const after = before + 'export const p4 = 4\n'
    assert.equal(applyHunks(before, hunks), after)
    assert.equal(undoHunks(after, hunks), before)
  })
  test('two hunks far apart, and an end-of-file hunk', () => {
    const far = Array.from({ length: 60 }, (_, i) => `export const far${i + 1} = ${i + 1}`)
    const before = far.join('\n') + '\n'
    const after = before.replace('far3 = 3\n', 'far3 = 33\n').replace('far56 = 56', 'far56 = 5656')
    const hunks = [
      hunk(
        ['export const far2 = 2', 'export const far3 = 3'],
        ['export const far2 = 2', 'export const far3 = 33'],
      ),
      hunk(['export const far56 = 56'], ['export const far56 = 5656']),
    ]
    assert.equal(applyHunks(before, hunks), after)
    assert.equal(undoHunks(after, hunks), before)
    const end = [hunk(['x', 'y'], ['x', 'Y'], { atEnd: true })]
    assert.equal(applyHunks('x\ny\nx\ny\n', end), 'x\ny\nx\nY\n')
    assert.equal(undoHunks('x\ny\nx\nY\n', end), 'x\ny\nx\ny\n')
  })
})
