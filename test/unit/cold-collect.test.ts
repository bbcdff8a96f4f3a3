/**
 * The collection after a request parsed whole: only for bodies of the size asked for, and never
 * on a heap so large that marking it would hold every request for long.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ColdCollector } from '../../src/http/cold-collect.js'
import { createLogger } from '../../src/log.js'

const MB = 1 << 20

function collector(heap: number, lines: string[] = []) {
  let runs = 0
  const log = createLogger('debug', (line) => void lines.push(line))
  const cold = new ColdCollector(
    256 * 1024,
    () => void runs++,
    log,
    128 * MB,
    () => heap,
  )
  return { cold, runs: () => runs, lines }
}

test('collects after a body of the size asked for, not after a smaller one', () => {
  const { cold, runs, lines } = collector(60 * MB)
  cold.ended(100 * 1024)
  assert.equal(runs(), 0)
  cold.ended(256 * 1024)
  cold.ended(4 * MB)
  assert.equal(runs(), 2)
  const line = JSON.parse(lines.find((l) => l.includes('"cold-collected"'))!) as Record<
    string,
    unknown
  >
  assert.equal(line.heapMb, 60)
  assert.equal(typeof line.ms, 'number')
})

test('not on a heap past the bound: V8 collects that one alongside the requests', () => {
  const { cold, runs, lines } = collector(129 * MB)
  cold.ended(4 * MB)
  assert.equal(runs(), 0)
  assert.ok(lines.some((l) => l.includes('"cold-collect-skipped"')))
})

test('the heap in use is read from V8 by default', () => {
  let runs = 0
  const cold = new ColdCollector(1, () => void runs++)
  cold.ended(1)
  assert.equal(runs, 1, 'this test process is far below the bound')
})
