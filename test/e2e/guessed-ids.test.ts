/**
 * A new result's id is claimed in the same store batch as its write when the process knows the
 * session's next number, and rendered again when that guess was wrong: another process or a
 * recall took numbers meanwhile. Real SQLite files, two proxies on one, a scripted upstream.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Database from 'better-sqlite3'
import { createStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import { TestAgent } from '../helpers/agent.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, scriptedModel, toolTexts } from '../helpers/model.js'
import { startProxy, type TestProxy } from '../helpers/proxy.js'
import { makeProject } from '../helpers/workspace.js'

const DAY = 86_400_000

/** The store, noting each claim it is asked for: a claim alone, or a claim with its write. */
function noting(store: Store): { store: Store; claims: string[] } {
  const claims: string[] = []
  return {
    claims,
    store: {
      ...store,
      async claimIds(scope, keys) {
        const ids = await store.claimIds(scope, keys)
        if (keys.length > 0) claims.push(`claim ${ids.join(',')}`)
        return ids
      },
      async claimThenPut(scope, keys, expected, entries) {
        const out = await store.claimThenPut(scope, keys, expected, entries)
        claims.push(
          `${out.winners ? 'claim and write' : 'guessed wrong'} ${expected.join(',')}` +
            (out.winners ? '' : `: got ${out.ids.join(',')}`),
        )
        return out
      },
    },
  }
}

const bash = (command: string) => ({ calls: [{ name: 'Bash', args: { command } }] })

/** What the upstream sees of five `echo`s counting to five, each result with the next id. */
const COUNTED = ['one', 'two', 'three', 'four', 'five'].map(
  (word, i) => `[#000${i + 1}]\n${word}\n`,
)

describe('ids guessed and claimed with the write', () => {
  let upstream: FakeUpstream
  let project: string
  let dir: string
  before(async () => {
    upstream = await startFakeUpstream()
    project = makeProject()
    dir = mkdtempSync(join(tmpdir(), 'lembas-guessed-'))
  })
  after(async () => {
    await upstream.close()
    rmSync(project, { recursive: true, force: true })
    rmSync(dir, { recursive: true, force: true })
  })

  test('two proxies on one SQLite file: one store call a result where the guess holds, the right ids where it does not', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        bash('echo one'),
        bash('echo two'),
        bash('echo three'),
        bash('echo four'),
        bash('echo five'),
        { content: 'Done.' },
      ]),
    )
    const file = join(dir, 'replicas.db')
    const a = noting(await createStore('sqlite:' + file, { idleTtlMs: DAY }))
    const b = noting(await createStore('sqlite:' + file, { idleTtlMs: DAY }))
    const proxies: TestProxy[] = [
      await startProxy({ upstreamUrl: upstream.url, store: a.store }),
      await startProxy({ upstreamUrl: upstream.url, store: b.store }),
    ]
    try {
      const [pa, pb] = proxies.map((p) => p.url) as [string, string]
      // Request by request: the fourth (the third result) goes to the other process.
      const agent = new TestAgent({ proxyUrl: [pa, pa, pa, pb, pa, pa], workspace: project })
      assert.equal(await agent.ask('Count'), 'Done.')
      assert.deepEqual(a.claims, [
        'claim 1', // nothing known of the session yet: claimed first
        'claim and write 2',
        'guessed wrong 3: got 4', // the other process took 3: rendered again as 4
        'claim 5', // after a wrong guess, claimed first once
      ])
      assert.deepEqual(b.claims, ['claim 3'])
      assert.deepEqual(prefixViolations(upstream.requests), [])
      const texts = toolTexts(chatRequests(upstream.requests).at(-1))
      assert.deepEqual(texts, COUNTED)
    } finally {
      for (const proxy of proxies) await proxy.close()
      await a.store.close()
      await b.store.close()
    }
  })

  test('a recall answer is claimed with its write too, and the result after it', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        bash('seq 1 3'),
        bash('echo again'),
        { calls: [{ name: 'recall', args: { id: '#0001' } }] },
        bash('echo after'),
        { content: 'Done.' },
      ]),
    )
    const noted = noting(await createStore('sqlite:' + join(dir, 'recall.db'), { idleTtlMs: DAY }))
    const proxy = await startProxy({ upstreamUrl: upstream.url, store: noted.store })
    try {
      const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project })
      assert.equal(await agent.ask('Count'), 'Done.')
      assert.deepEqual(noted.claims, [
        'claim 1',
        'claim and write 2',
        'claim and write 3', // the recall's answer, under its own id
        'claim and write 4', // what it claimed is known: the guess holds
      ])
      const texts = toolTexts(chatRequests(upstream.requests).at(-1))
      assert.deepEqual(texts, [
        '[#0001]\n1\n2\n3\n',
        '[#0002]\nagain\n',
        '[#0003 recall #0001 lines 1-3 of 3]\n1\n2\n3',
        '[#0004]\nafter\n',
      ])
    } finally {
      await proxy.close()
      await noted.store.close()
    }
  })

  test('a store that lost the session under a running proxy: new ids go on after those sent, none twice', async () => {
    upstream.requests.length = 0
    const file = join(dir, 'lost.db')
    // What Redis restarted without persistence, or a scope expired, leaves: nothing of it.
    const wipe = () => {
      const db = new Database(file)
      db.exec('DELETE FROM kv; DELETE FROM counters')
      db.close()
    }
    upstream.setScript(
      scriptedModel([
        bash('echo one'),
        bash('echo two'),
        bash('echo three'),
        () => (wipe(), bash('echo four')),
        bash('echo five'),
        { content: 'Done.' },
      ]),
    )
    const noted = noting(await createStore('sqlite:' + file, { idleTtlMs: DAY }))
    const proxy = await startProxy({ upstreamUrl: upstream.url, store: noted.store })
    try {
      const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project })
      assert.equal(await agent.ask('Count'), 'Done.')
      assert.deepEqual(prefixViolations(upstream.requests), [])
      const texts = toolTexts(chatRequests(upstream.requests).at(-1))
      assert.deepEqual(texts, COUNTED)
      assert.deepEqual(noted.claims.slice(-2), ['claim and write 4', 'claim and write 5'])
    } finally {
      await proxy.close()
      await noted.store.close()
    }
  })
})
