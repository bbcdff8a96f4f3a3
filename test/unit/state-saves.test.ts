/**
 * Saves of the fast path's states (`--save-states-s`): only what changed since the last round is
 * written, a state taken on from a save is not written back, a key held in memory is never read
 * from the store, and a save of other settings is not taken on.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { silentLogger } from '../../src/log.js'
import { Memo } from '../../src/memo.js'
import { SpliceCache } from '../../src/pipeline/splice.js'
import { StateSaves } from '../../src/pipeline/state-saves.js'
import { createStore, type Store } from '../../src/store/index.js'
import { chatCompletion, startFakeUpstream } from '../helpers/fake-upstream.js'
import { postChat, startProxy } from '../helpers/proxy.js'

/** A process's saves: `fingerprint` stands for its version and settings. */
function options(fingerprint: string, now = () => 0) {
  return { fingerprint, everyMs: 30_000, unsaved: new Memo<number>(100), log: silentLogger, now }
}

/** A store that counts its latest-value writes and reads. */
function counted(store: Store) {
  const calls = { set: 0, get: 0 }
  const wrapped: Store = {
    ...store,
    setLatest: (scope, key, value) => (calls.set++, store.setLatest(scope, key, value)),
    getLatest: (scope, key) => (calls.get++, store.getLatest(scope, key)),
  }
  return { store: wrapped, calls }
}

/** A session's request after `steps` results of `cat a.txt`. */
function body(session: string, steps: number) {
  return {
    model: 'm',
    tools: [{ type: 'function', function: { name: 'Bash' } }],
    messages: [
      { role: 'system', content: `session ${session}` },
      { role: 'user', content: 'work' },
      ...Array.from({ length: steps }, (_, i) => [
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_${i}`,
              type: 'function',
              function: { name: 'Bash', arguments: '{"command":"cat a.txt"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: `call_${i}`, content: `a.txt, line ${i}\n` },
      ]).flat(),
    ],
  }
}

/**
 * A proxy on a memory store with the fast-path memory `splice`, for `run`, and the same store
 * counted for the saves under test (the proxy writes latest values of its own: it gets the store
 * uncounted).
 */
async function withProxy(
  run: (setup: {
    counted: ReturnType<typeof counted>
    splice: SpliceCache
    post: (session: string, steps: number) => Promise<void>
  }) => Promise<void>,
): Promise<void> {
  const shared = await createStore('memory:', { idleTtlMs: 60_000 })
  const upstream = await startFakeUpstream(() => ({ json: chatCompletion({ content: 'ok' }) }))
  const splice = new SpliceCache(1 << 20)
  const proxy = await startProxy({ upstreamUrl: upstream.url, store: shared, splice })
  const post = async (session: string, steps: number) => {
    const sent = await postChat(proxy.url, body(session, steps), { 'x-session-id': session })
    assert.equal(sent.status, 200)
  }
  try {
    await run({ counted: counted(shared), splice, post })
  } finally {
    await proxy.close()
    await upstream.close()
  }
}

test('a round saves the keys that changed; a restored state is not saved back', async () => {
  await withProxy(async ({ counted: { store, calls }, splice: first, post }) => {
    const saves = new StateSaves(first, store, options('v1'))
    for (const session of ['x', 'y'])
      for (let steps = 1; steps <= 2; steps++) await post(session, steps)
    const keys = [...first.all()].map(([key]) => key)
    assert.equal(keys.length, 2)

    await saves.saveChanged()
    assert.equal(calls.set, 2, 'one write a key')
    await saves.saveChanged()
    assert.equal(calls.set, 2, 'nothing changed since: nothing written')
    await post('x', 3)
    await saves.saveChanged()
    assert.equal(calls.set, 3, 'only the key that changed')

    // Another process: it takes the save on, once, and does not write it back.
    const second = new SpliceCache(1 << 20)
    const restoring = new StateSaves(second, store, options('v1'))
    assert.equal(await restoring.restore(keys[0]!), true)
    assert.equal(second.states(keys[0]!).length, 1)
    const reads = calls.get
    assert.equal(await restoring.restore(keys[0]!), false, 'held in memory: no store read')
    assert.equal(calls.get, reads)
    await restoring.saveChanged()
    assert.equal(calls.set, 3, 'a restored state is not saved back')

    // Another version or other settings: not taken on.
    const other = new SpliceCache(1 << 20)
    assert.equal(await new StateSaves(other, store, options('v2')).restore(keys[1]!), false)
    assert.equal(other.states(keys[1]!).length, 0)
    assert.equal(await restoring.restore('a key nobody saved'), false)
  })
})

test('a store that fails a save keeps the key for the next round', async () => {
  await withProxy(async ({ counted: { store, calls }, splice, post }) => {
    let failing = true
    const flaky: Store = {
      ...store,
      setLatest: (scope, key, value) =>
        failing ? Promise.reject(new Error('down')) : store.setLatest(scope, key, value),
    }
    const saves = new StateSaves(splice, flaky, options('v1'))
    await post('z', 1)
    await saves.saveChanged()
    assert.equal(calls.set, 0)
    failing = false
    await saves.saveChanged()
    assert.equal(calls.set, 1, 'written on the next round')
  })
})

test('a key found with no save is not asked again until a round may have saved it', async () => {
  await withProxy(async ({ counted: { store, calls }, splice: serving, post }) => {
    let clock = 0
    const restoring = new StateSaves(
      new SpliceCache(1 << 20),
      store,
      options('v1', () => clock),
    )
    // It saves what changes from its start on.
    const saving = new StateSaves(serving, store, options('v1'))
    await post('w', 1)
    const [key] = [...serving.all()].map(([k]) => k)
    assert.equal(await restoring.restore(key!), false, 'nothing saved yet')
    assert.equal(calls.get, 1)
    await saving.saveChanged()
    clock = 29_000
    assert.equal(await restoring.restore(key!), false, 'within a round: not asked')
    assert.equal(calls.get, 1)
    clock = 30_000
    assert.equal(await restoring.restore(key!), true, 'a round later: the save is there')
    assert.equal(calls.get, 2)
  })
})
