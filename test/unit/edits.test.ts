import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  applyHunks,
  applyReplacements,
  undoHunks,
  undoReplacements,
} from '../../src/pipeline/edits.js'

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
