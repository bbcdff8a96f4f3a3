/**
 * `--stats store` (the default): /stats goes on over a restart of the real command line, from the
 * figures kept in the store; `--stats memory` starts from zero.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import type { StatsSnapshot } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { startProxyCli, stopCli } from '../helpers/cli.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { chatWithResults, postChat } from '../helpers/proxy.js'

test('the figures survive a restart on SQLite; --stats memory starts from zero', async () => {
  const upstream = await startFakeUpstream()
  const dir = mkdtempSync(join(tmpdir(), 'lembas-stats-'))
  const store = `sqlite:${join(dir, 'store.db')}`
  const snapshot = async (url: string) =>
    (await (await fetch(url + '/stats')).json()) as StatsSnapshot
  try {
    const first = await startProxyCli(upstream.url, store)
    for (const id of ['a', 'b'])
      await postChat(first.url, chatWithResults([{ id, output: `out ${id}` }]), {
        'x-session-id': `kept-${id}`,
      })
    const before = await snapshot(first.url)
    assert.equal(before.totals.requests, 2)
    await stopCli(first) // SIGTERM: the figures are written on the way out
    const again = await startProxyCli(upstream.url, store)
    const after = await snapshot(again.url)
    assert.equal(after.totals.requests, 2)
    assert.equal(after.totals.newResults, 2)
    assert.equal(after.since, before.since)
    assert.deepEqual(
      after.sessions.map((s) => [s.session, s.requests]).sort(),
      before.sessions.map((s) => [s.session, s.requests]).sort(),
    )
    await stopCli(again)

    // Figures an older version kept under its address alone are taken up once.
    const { hostname } = await import('node:os')
    const kept = await createStore(store, { idleTtlMs: 86_400_000 })
    const figures = await kept.getLatest('lembas-stats', `figures:${hostname()}/127.0.0.1:0`)
    await kept.close()
    assert.ok(figures, 'kept under the machine and the address')
    const older = await createStore(`sqlite:${join(dir, 'older.db')}`, { idleTtlMs: 86_400_000 })
    await older.setLatest('lembas-stats', 'figures:127.0.0.1:0', figures)
    await older.close()
    const upgraded = await startProxyCli(upstream.url, `sqlite:${join(dir, 'older.db')}`)
    assert.equal((await snapshot(upgraded.url)).totals.requests, 2)
    await stopCli(upgraded)

    // An --observe run's "would save" is kept apart: switched on, from zero; switched off again,
    // the real figures as they were, none of the shadow's added.
    const observing = await startProxyCli(upstream.url, store, ['--observe'])
    assert.equal((await snapshot(observing.url)).totals.requests, 0)
    await postChat(observing.url, chatWithResults([{ id: 'o', output: 'out o' }]), {
      'x-session-id': 'kept-o',
    })
    // Observed requests are counted once their shadow is done, which may end after the answer.
    let counted = 0
    for (let i = 0; i < 100 && counted === 0; i++) {
      counted = (await snapshot(observing.url)).totals.requests
      if (counted === 0) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(counted, 1)
    await stopCli(observing)
    const observedAgain = await startProxyCli(upstream.url, store, ['--observe'])
    assert.equal((await snapshot(observedAgain.url)).totals.requests, 1)
    await stopCli(observedAgain)
    const real = await startProxyCli(upstream.url, store)
    assert.equal((await snapshot(real.url)).totals.requests, 2)
    await stopCli(real)

    const fresh = await startProxyCli(upstream.url, store, ['--stats', 'memory'])
    assert.equal((await snapshot(fresh.url)).totals.requests, 0)
    await stopCli(fresh)
  } finally {
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
