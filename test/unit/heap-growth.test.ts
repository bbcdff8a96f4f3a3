/**
 * When `--heap-growth-percent` sets V8's growth factor and when it leaves V8's (the effect itself
 * is test/e2e/heap-growth.test.ts's, on the built command line).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setHeapGrowth } from '../../src/http/heap-growth.js'

test('0 leaves V8 its own rule', () => {
  assert.equal(setHeapGrowth(0, []), false)
})

test("node's own --heap-growing-percent on its command line is the user's choice: left as given", () => {
  assert.equal(setHeapGrowth(200, ['--heap-growing-percent=30']), false)
  assert.equal(setHeapGrowth(200, ['--heap_growing_percent', '30']), false)
})

test('otherwise it is set', () => {
  assert.equal(setHeapGrowth(200, ['--trace-gc', '--max-semi-space-size=8']), true)
})
