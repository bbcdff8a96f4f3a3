/** Blind reads are remembered by one string of short line hashes; older records still match. */
import assert from 'node:assert/strict'
import { hash } from 'node:crypto'
import { test } from 'node:test'
import { DedupeTable, hashLines, legacyLineHashes } from '../../src/context/index.js'
import type { ReadEntry } from '../../src/context/index.js'

const lines = Array.from({ length: 50 }, (_, i) => `line ${i + 1}`)
const read = (start: number, end: number) => ({
  absPath: '/w/a.txt',
  start,
  end,
  shown: lines.slice(start - 1, end),
})

test('a later read of lines a blind read showed finds it; a changed line does not', () => {
  const table = new DedupeTable()
  const lineHashes = hashLines(lines)
  assert.equal(lineHashes.length, 8 * lines.length, 'eight characters a line')
  table.add({ kind: 'read', id: '#0001', absPath: '/w/a.txt', start: 1, end: 50, lineHashes })
  assert.equal(table.findRead(read(10, 20) as never)?.id, '#0001', 'a range inside')
  const changed = { ...read(10, 20), shown: [...lines.slice(9, 19), 'edited'] }
  assert.equal(table.findRead(changed as never), undefined, 'one line differs')
  assert.equal(table.findRead({ ...read(45, 50), end: 51 } as never), undefined, 'past its end')
})

test('an entry stored with the older array of hashes is read as today’s', () => {
  const old = lines.map((line) => hash('sha256', line, 'base64url').slice(0, 16))
  const stored = JSON.parse(
    JSON.stringify({
      kind: 'read',
      id: '#0002',
      absPath: '/w/a.txt',
      start: 1,
      end: 50,
      lineHashes: old,
    }),
  ) as ReadEntry
  const table = new DedupeTable()
  table.add(legacyLineHashes(stored))
  assert.equal(table.findRead(read(1, 50) as never)?.id, '#0002')
  assert.equal(table.findRead(read(30, 31) as never)?.id, '#0002')
})
