import assert from 'node:assert/strict'
import { test } from 'node:test'
import { followFork, ownNewest, SessionRef } from '../../src/session/find.js'
import { explicitScope } from '../../src/session/identity.js'
import { keys } from '../../src/session/records.js'
import { createStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'

const tenant = 'tKey'
const named = (id: string) => {
  const identity = { tenant, explicit: 'b:' + id }
  return new SessionRef(identity, explicitScope(identity))
}

/** A session that rendered `results` in one request each, in order. */
async function rendered(store: Store, session: SessionRef, results: readonly string[]) {
  for (const [i, key] of results.entries()) {
    const prev = i === 0 ? {} : { prev: results[i - 1] }
    const record = JSON.stringify({ n: i + 1, content: `[#000${i + 1}]`, ...prev })
    await store.putIfAbsent(session.scope!, [[keys.tool(key), record]])
    await ownNewest(session, session.scope!, key, store)
  }
}

test('a new session id whose last two results another session saw in a row goes on that session, and stays with it', async () => {
  const store = await createStore('memory:', { idleTtlMs: 86_400_000 })
  const original = named('original')
  await rendered(store, original, ['m1', 'm2'])
  const fork = named('fork')
  await followFork(fork, ['m1', undefined, 'm2', undefined], true, store)
  assert.equal(fork.scope, original.scope)
  // Later, with a newest result of the fork's own (not indexed yet): the fork's record says.
  const again = named('fork')
  await followFork(again, ['m1', 'm2', 'm3'], false, store)
  assert.equal(again.scope, original.scope)
})

test('one result, two that another session did not see in a row, a result of its own, or no id: no fork', async () => {
  const store = await createStore('memory:', { idleTtlMs: 86_400_000 })
  const original = named('a')
  await rendered(store, original, ['m1', 'm2'])
  const own = (id: string) => explicitScope({ tenant, explicit: 'b:' + id })
  // A first result alike (a server that names every call call_0, the same first command).
  const alone = named('b')
  await followFork(alone, ['m2'], true, store)
  assert.equal(alone.scope, own('b'))
  const elsewhere = named('c')
  await followFork(elsewhere, ['m0', 'm2'], true, store)
  assert.equal(elsewhere.scope, own('c'))
  const itself = named('d')
  await store.putIfAbsent(itself.scope!, [[keys.tool('m2'), '{"n":1,"content":"[#0001]"}']])
  await followFork(itself, ['m1', 'm2'], true, store)
  assert.equal(itself.scope, own('d'))
  const unanswered = named('f')
  await followFork(unanswered, ['m1', 'm2'], false, store)
  assert.equal(unanswered.scope, own('f'), "the session's own new results: no fork")
  const unknown = named('e')
  await followFork(unknown, ['m1', 'm9'], true, store)
  assert.equal(unknown.scope, own('e'))
  const implicit = new SessionRef({ tenant }, undefined)
  await followFork(implicit, ['m1', 'm2'], true, store)
  assert.equal(implicit.scope, undefined)
  await ownNewest(implicit, 'x', 'm5', store)
  assert.deepEqual(await store.get(tenant, [keys.ownerOfTool('m5')]), [undefined])
})
