import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createStore } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { TestAgent } from '../helpers/agent.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, scriptedModel, toolTexts } from '../helpers/model.js'
import { promptBlock, startProxy } from '../helpers/proxy.js'
import { startRedis } from '../helpers/redis-server.js'
import { makeProject, sha8 } from '../helpers/workspace.js'

const DAY = 86_400_000

/** A session that reads, re-reads, lists twice and runs a long command. */
function sessionPlan(project: string) {
  const app = join(project, 'app.ts')
  return [
    { calls: [{ name: 'Read', args: { file_path: app } }] },
    { calls: [{ name: 'Read', args: { file_path: app, offset: 50, limit: 31 } }] },
    { calls: [{ name: 'Glob', args: { pattern: '*.ts', path: project } }] },
    { calls: [{ name: 'Glob', args: { path: project, pattern: '*.ts' } }] },
    { calls: [{ name: 'Bash', args: { command: 'seq 1 1000' } }] },
    { content: 'All done.' },
  ]
}

for (const stream of [false, true]) {
  describe(`a session through the proxy (${stream ? 'streaming' : 'non-streaming'})`, () => {
    let upstream: FakeUpstream
    let project: string
    before(async () => {
      upstream = await startFakeUpstream()
      project = makeProject()
    })
    after(async () => {
      await upstream.close()
      rmSync(project, { recursive: true, force: true })
    })

    test('renders new results per the spec and keeps every earlier message byte-identical', async () => {
      upstream.setScript(scriptedModel(sessionPlan(project)))
      const store = await createStore('memory:', { idleTtlMs: DAY })
      const workspace = await createWorkspace([project])
      const proxy = await startProxy({ upstreamUrl: upstream.url, store, workspace })
      try {
        const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project, stream })
        assert.equal(await agent.ask('Tidy app.ts'), 'All done.')
        const requests = chatRequests(upstream.requests)
        assert.equal(requests.length, 6)
        assert.deepEqual(prefixViolations(upstream.requests), [])

        const app = join(project, 'app.ts')
        const sha = sha8(app)
        const texts = toolTexts(requests[5])
        assert.equal(texts.length, 5)
        assert.equal(texts[0]!.split('\n')[0], `[#0001 ${app} lines 1-340 of 340 sha ${sha}]`)
        assert.equal(texts[0]!.split('\n')[1], `     1→export const line1 = 1 // app`)
        assert.equal(
          texts[1],
          `[#0002 ${app} lines 50-80 of 340 sha ${sha}] Unchanged since #0001, which already shows lines 1-340.`,
        )
        assert.equal(texts[2], `[#0003]\n${join(project, 'app.ts')}\n${join(project, 'util.ts')}`)
        assert.equal(texts[3], '[#0004] Same result as #0003.')
        const capped = texts[4]!.split('\n')
        assert.equal(capped[0], '[#0005]')
        assert.equal(capped[200], '200')
        assert.equal(capped[201], '[700 lines elided, full output #0005]')
        assert.equal(capped[202], '901')
        assert.ok(texts[4]!.endsWith('\n1000\n'), 'the tail keeps the final newline')

        const system = requests[0].messages[0]
        assert.equal(system.role, 'system')
        assert.ok(system.content.endsWith('\n\n' + promptBlock))
        assert.equal(requests[0].tools.at(-1).function.name, 'recall')
        assert.equal(requests[0].tools.length, 6)
        // The client's own history is untouched by what the upstream saw.
        assert.equal(
          agent.messages.filter((m) => m.role === 'tool')[1]!.content.split('\n').length,
          31,
        )
      } finally {
        await proxy.close()
        await store.close()
      }
    })
  })
}

describe('the same session across restarts and replicas', () => {
  let upstream: FakeUpstream
  let project: string
  before(async () => {
    upstream = await startFakeUpstream()
    project = makeProject()
  })
  after(async () => {
    await upstream.close()
    rmSync(project, { recursive: true, force: true })
  })

  test('a proxy restarted on the same SQLite file renders the history identically and continues the ids', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lembas-sqlite-'))
    const file = join(dir, 'store.db')
    const app = join(project, 'app.ts')
    upstream.setScript(
      scriptedModel([
        ...sessionPlan(project),
        { calls: [{ name: 'Read', args: { file_path: app, offset: 1, limit: 10 } }] },
        { content: 'Still the same.' },
      ]),
    )
    const workspace = await createWorkspace([project])
    let store = await createStore('sqlite:' + file, { idleTtlMs: DAY })
    let proxy = await startProxy({ upstreamUrl: upstream.url, store, workspace })
    const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project })
    try {
      await agent.ask('Tidy app.ts')
      await proxy.close()
      await store.close()
      store = await createStore('sqlite:' + file, { idleTtlMs: DAY })
      proxy = await startProxy({ upstreamUrl: upstream.url, store, workspace })
      ;(agent.options as { proxyUrl: string }).proxyUrl = proxy.url
      assert.equal(await agent.ask('Look again'), 'Still the same.')
      assert.deepEqual(prefixViolations(upstream.requests), [])
      const last = chatRequests(upstream.requests).at(-1)
      assert.equal(
        toolTexts(last).at(-1),
        `[#0006 ${app} lines 1-10 of 340 sha ${sha8(app)}] Unchanged since #0001, which already shows lines 1-340.`,
      )
    } finally {
      await proxy.close()
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('two proxy processes on one Redis, taking requests in turn, send the same bytes', async () => {
    const redis = await startRedis()
    upstream.requests.length = 0
    upstream.setScript(scriptedModel(sessionPlan(project)))
    const workspace = await createWorkspace([project])
    const stores = [
      await createStore(redis.url, { idleTtlMs: DAY }),
      await createStore(redis.url, { idleTtlMs: DAY }),
    ]
    const proxies = [
      await startProxy({ upstreamUrl: upstream.url, store: stores[0]!, workspace }),
      await startProxy({ upstreamUrl: upstream.url, store: stores[1]!, workspace }),
    ]
    try {
      const agent = new TestAgent({ proxyUrl: proxies.map((p) => p.url), workspace: project })
      assert.equal(await agent.ask('Tidy app.ts'), 'All done.')
      assert.deepEqual(prefixViolations(upstream.requests), [])
      const texts = toolTexts(chatRequests(upstream.requests).at(-1))
      assert.deepEqual(
        texts.map((t) => t.slice(0, 7)),
        ['[#0001 ', '[#0002 ', '[#0003]', '[#0004]', '[#0005]'],
      )
      assert.match(texts[1]!, /Unchanged since #0001/)
    } finally {
      for (const proxy of proxies) await proxy.close()
      for (const store of stores) await store.close()
      await redis.stop()
    }
  })
})
