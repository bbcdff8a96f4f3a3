/** Bodies that will be parsed whole are let in within a byte budget, in arrival order. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ByteBudget } from '../../src/pipeline/admission.js'

test('within the budget bodies go at once; past it they wait their turn, first come first served', async () => {
  const budget = new ByteBudget(100)
  const a = await budget.acquire(60)
  const b = await budget.acquire(40)
  assert.equal(budget.used, 100, 'both fit')
  const order: string[] = []
  const c = budget.acquire(50).then((give) => (order.push('c'), give))
  const d = budget.acquire(10).then((give) => (order.push('d'), give))
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(budget.waiting, 2, 'both wait: the small one does not pass the big one')
  a()
  a()
  await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(order, ['c', 'd'], 'in arrival order, once there is room')
  assert.equal(budget.used, 100, 'given back once however often called')
  b()
  ;(await c)()
  ;(await d)()
  assert.equal(budget.used, 0, 'all given back')
})

test('one body larger than the whole budget still goes, alone', async () => {
  const budget = new ByteBudget(10)
  const big = await budget.acquire(1000)
  let small = false
  const next = budget.acquire(1).then((give) => ((small = true), give))
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(small, false, 'waits while the big one is in')
  big()
  ;(await next)()
  assert.equal(small, true, 'then goes')
})
