/** The fast path's memory counts what it holds, dedupe tables included, and stays in budget. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DedupeTable, hashLines } from '../../src/context/index.js'
import {
  closestState,
  prefixHash,
  PrefixWatch,
  SpliceCache,
  type SpliceState,
} from '../../src/pipeline/splice.js'

function state(
  scope: string,
  hashes: number,
  client: string[] = [],
  fixed: Record<string, string> = { tools: 'main tools' },
): SpliceState {
  const table = new DedupeTable()
  const lineHashes = hashLines(Array.from({ length: hashes }, (_, i) => `line ${i}`))
  table.add({ kind: 'read', id: '#0001', absPath: '/a', start: 1, end: hashes, lineHashes })
  return {
    scope,
    prefix: { length: 13, digest: Buffer.alloc(32), opens: true },
    kept: { pieces: [Buffer.from('{}')], bytes: 2, weight: 66 },
    digests: { client, upstream: client },
    fixed,
    history: { table },
  } as unknown as SpliceState
}

test('a remembered state weighs its dedupe table; past the budget the least recent goes', () => {
  const cache = new SpliceCache(300_000)
  cache.remember('a', state('s/a', 10_000))
  assert.ok(cache.bytes > 10_000 * 8, `the line hashes count: ${cache.bytes}`)
  cache.remember('b', state('s/b', 10_000))
  cache.remember('c', state('s/c', 20_000))
  assert.ok(cache.bytes <= 300_000, `within budget: ${cache.bytes}`)
  assert.equal(cache.states('a').length, 0, 'the least recent went')
  assert.equal(cache.states('c').length, 1)
})

test('a prefix watch digests the body at each remembered length as chunks arrive', () => {
  const body = Buffer.from('{"messages":[{"a":1},{"b":2},{"c":3}]}')
  const watch = new PrefixWatch([20, 13, 27, 20])
  for (let at = 0; at < body.length; at += 5) watch.update(body.subarray(at, at + 5))
  for (const length of [13, 20, 27])
    assert.ok(
      watch.at(length)!.equals(prefixHash(body.subarray(0, length)).digest()),
      `the digest at ${length}`,
    )
  assert.equal(watch.at(21), undefined, 'only at the lengths asked for')
})

test('the watch goes on from its last length, where the next prefix is digested', () => {
  const body = Buffer.from('{"messages":[{"a":1},{"b":2},{"c":3}]}')
  const watch = new PrefixWatch([13, 27])
  watch.update(body)
  assert.equal(watch.runningAt(13), undefined, 'it went on past 13')
  const running = watch.runningAt(27)!
  assert.ok(
    running
      .update(body.subarray(27, 33))
      .digest()
      .equals(prefixHash(body.subarray(0, 33)).digest()),
  )
})

test('one session keeps each of its conversations; a request that goes on from one replaces it', () => {
  const cache = new SpliceCache(1_000_000)
  const main = state('s', 1, ['sys', 'task', 'r1'])
  const subagent = state('s', 1, ['sub', 'find', 'r2'])
  cache.remember('k', main)
  cache.remember('k', subagent)
  assert.deepEqual(cache.states('k'), [subagent, main], 'a subagent does not push the main one out')
  const mainLater = state('s', 1, ['sys', 'task', 'r1', 'call', 'r3'])
  cache.remember('k', mainLater)
  assert.deepEqual(cache.states('k'), [mainLater, subagent], 'the main one goes on from itself')
  const otherSession = state('t', 1, ['sys', 'task', 'r1', 'call', 'r3', 'more'])
  cache.remember('k', otherSession)
  assert.equal(cache.states('k').length, 3, 'another session never replaces it')
})

const tools = { tools: 'main tools' }

test("a request's previous state is its own conversation's, never another's", () => {
  const main = state('s', 1, ['sys', 'task', 'r1', 'call'])
  const subagent = state('s', 1, ['sub', 'find', 'r2'])
  const states = [subagent, main]
  assert.equal(closestState(states, 's', ['sys', 'task', 'r1', 'call', 'r3'], tools), main)
  assert.equal(closestState(states, 's', ['sub', 'find', 'r2', 'x'], tools), subagent)
  // A new subagent shares nothing with either: it breaks no cache.
  assert.equal(closestState(states, 's', ['sub2', 'other', 'r9'], tools), undefined)
  // A system message that changed (item 0) is still the main conversation, broken from item 0.
  assert.equal(closestState(states, 's', ['sys at 10:02', 'task', 'r1', 'call', 'r3'], tools), main)
  assert.equal(closestState(states, 't', ['sys', 'task'], tools), undefined, 'its own session only')
  // opencode's subagent: the main one's system message, then a task of its own, other tools.
  assert.equal(closestState(states, 's', ['sys', 'explore'], { tools: 'task tools' }), undefined)
  // The same tools: the main conversation, its first message written again (a break).
  assert.equal(closestState(states, 's', ['sys', 'explore'], tools), main)
})

test('a state that holds no item yet is gone on from only with the same tools and system', () => {
  const cache = new SpliceCache(1_000_000)
  // /v1/messages keeps a conversation's last two messages back: its first request holds none.
  const main = state('s', 1, [])
  cache.remember('k', main)
  const subagent = state('s', 1, [], { tools: 'task tools' })
  cache.remember('k', subagent)
  assert.deepEqual(cache.states('k'), [subagent, main], "the subagent's first keeps the main one")
  const mainLater = state('s', 1, ['task', 'answer'])
  cache.remember('k', mainLater)
  assert.deepEqual(cache.states('k'), [mainLater, subagent], 'the main one goes on from itself')
})
