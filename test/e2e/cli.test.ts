/**
 * The real command line: `lembas-proxy` processes started as a user starts them, two at once
 * on one Redis, one killed and started again, with an agent taking requests to each in turn.
 */
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { TestAgent } from '../helpers/agent.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, scriptedModel } from '../helpers/model.js'
import { startCli, stopCli, upgradeAnswer } from '../helpers/cli.js'
import { startRedis, type TestRedis } from '../helpers/redis-server.js'
import { makeProject } from '../helpers/workspace.js'
import { join } from 'node:path'

describe('the lembas-proxy command', () => {
  let upstream: FakeUpstream
  let redis: TestRedis
  let project: string
  before(async () => {
    upstream = await startFakeUpstream()
    redis = await startRedis()
    project = makeProject()
  })
  after(async () => {
    await upstream.close()
    await redis.stop()
    rmSync(project, { recursive: true, force: true })
  })

  /** The proxy in front of the fake upstream, on a free port, with a memory store. */
  const plainFlags = () => ['--port', '0', '--upstream', upstream.url, '--store', 'memory:']

  test('prints its listening line and answers healthz', async () => {
    const running = await startCli(plainFlags())
    try {
      assert.match(
        running.stdout,
        new RegExp(
          `^lembas-proxy listening on http://127\\.0\\.0\\.1:\\d+ -> ${upstream.url.replace(/[/.]/g, '\\$&')}\\n`,
        ),
      )
      const health = await fetch(running.url + '/healthz')
      assert.equal(health.status, 200)
      assert.equal(((await health.json()) as { ok: boolean }).ok, true)
    } finally {
      await stopCli(running)
    }
  })

  test('a WebSocket upgrade is refused with 426 at once, and the next connection is served', async () => {
    const running = await startCli(plainFlags())
    try {
      const answer = await upgradeAnswer(running.url)
      assert.match(answer, /^HTTP\/1\.1 426 Upgrade Required\r\n/)
      assert.match(answer, /"code":"websocket_unsupported"/)
      const sent = upstream.requests.length
      const health = await fetch(running.url + '/healthz')
      assert.equal(health.status, 200)
      assert.equal(upstream.requests.length, sent, 'the upgrade never reached the upstream')
    } finally {
      await stopCli(running)
    }
  })

  test('a bad flag stops it with a message naming the flag', async () => {
    await assert.rejects(startCli(['--port', 'nope']), /--port/)
    await assert.rejects(startCli(['--store', 'postgres://x']), /store .* is not understood/)
  })

  test('after a burst of bodies and an idle pause it collects its garbage once, and never with --idle-collect-ms 0', async () => {
    const body = (i: number) =>
      JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: `${i} ` + 'x'.repeat(1 << 20) }],
      })
    const burst = async (url: string) => {
      // 33 MB of bodies: past the 32 MB that make a burst.
      for (let i = 0; i < 33; i++) {
        const response = await fetch(url + '/v1/chat/completions', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: body(i),
        })
        assert.equal(response.status, 200)
        await response.text()
      }
      upstream.requests.length = 0
    }
    const flags = plainFlags()
    const env = { LEMBAS_LOG_LEVEL: 'info' }
    const on = await startCli([...flags, '--idle-collect-ms', '200'], env)
    const off = await startCli([...flags, '--idle-collect-ms', '0'], env)
    try {
      await burst(on.url)
      await burst(off.url)
      const collected = () =>
        on
          .stderr()
          .split('\n')
          .filter((line) => line.includes('"memory-collected"'))
      for (let waited = 0; collected().length === 0 && waited < 5000; waited += 100)
        await sleep(100)
      await sleep(500)
      assert.equal(collected().length, 1, on.stderr())
      const line = JSON.parse(collected()[0]!) as Record<string, number>
      assert.ok(line.heapAfterMb! <= line.heapBeforeMb!, collected()[0])
      assert.doesNotMatch(off.stderr(), /memory-collected|idle-collect/)
    } finally {
      await stopCli(on)
      await stopCli(off)
    }
  })

  test('two processes on one Redis, one killed and restarted mid-session: same bytes, ids go on', async () => {
    const app = join(project, 'app.ts')
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Read', args: { file_path: app } }] },
        { calls: [{ name: 'Bash', args: { command: 'seq 1 500' } }] },
        { calls: [{ name: 'Read', args: { file_path: app, offset: 10, limit: 10 } }] },
        { calls: [{ name: 'Glob', args: { pattern: '*.ts', path: project } }] },
        { calls: [{ name: 'Glob', args: { pattern: '*.ts', path: project } }] },
        { content: 'done' },
      ]),
    )
    const args = [
      '--port',
      '0',
      '--upstream',
      upstream.url,
      '--store',
      redis.url,
      '--workspace',
      project,
    ]
    const a = await startCli(args)
    let b = await startCli(args)
    const urls = [a.url, b.url]
    const agent = new TestAgent({ proxyUrl: urls, workspace: project })
    // Before the fourth request (b's second), b dies without a goodbye and is started again.
    const complete = agent.complete.bind(agent)
    agent.complete = async () => {
      if (agent.replies.length === 3) {
        await stopCli(b, 'SIGKILL')
        b = await startCli(args)
        urls[1] = b.url
      }
      return complete()
    }
    try {
      assert.equal(await agent.ask('work'), 'done')
      assert.deepEqual(prefixViolations(upstream.requests), [])
      const tools = chatRequests(upstream.requests)
        .at(-1)
        .messages.filter((m: any) => m.role === 'tool')
      assert.deepEqual(
        tools.map((m: any) => m.content.split('\n')[0].split(' ')[0]),
        ['[#0001', '[#0002]', '[#0003', '[#0004]', '[#0005]'],
      )
      assert.match(tools[2].content, /Unchanged since #0001/)
      assert.equal(tools[4].content, '[#0005] Same result as #0004.')
    } finally {
      await stopCli(a)
      await stopCli(b)
    }
  })
})
