import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { TestAgent } from '../helpers/agent.js'
import { chatCompletion, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, scriptedModel } from '../helpers/model.js'
import { postChat, startProxy, type TestProxy } from '../helpers/proxy.js'
import { startRedis } from '../helpers/redis-server.js'
import { makeProject } from '../helpers/workspace.js'

const DAY = 86_400_000
const TOOLS = [
  { type: 'function', function: { name: 'Bash', parameters: { type: 'object', properties: {} } } },
]

/** A conversation that already ran one Bash call: its result is new to the proxy. */
function withResult(id: string, output: string) {
  return {
    model: 'm',
    tools: TOOLS,
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'run it' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id, type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } },
        ],
      },
      { role: 'tool', tool_call_id: id, content: output },
    ],
  }
}

function toolContents(request: any): unknown[] {
  return request.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content)
}

describe('sessions', () => {
  let upstream: FakeUpstream
  let proxy: TestProxy
  let store: Store
  let project: string
  before(async () => {
    upstream = await startFakeUpstream()
    store = await createStore('memory:', { idleTtlMs: DAY })
    project = makeProject()
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store,
      workspace: await createWorkspace([project]),
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
    rmSync(project, { recursive: true, force: true })
  })

  test('another API key neither continues nor recalls a session', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { content: 'a' },
        { calls: [{ name: 'recall', args: { id: '#0001' } }] },
        { content: 'b' },
      ]),
    )
    const body = withResult('call_tenant', 'secret output')
    await postChat(proxy.url, body, { authorization: 'Bearer key-A' })
    await postChat(proxy.url, body, { authorization: 'Bearer key-B' })
    const [a, b, recall] = chatRequests(upstream.requests)
    assert.deepEqual(toolContents(a), ['[#0001]\nsecret output'])
    assert.deepEqual(toolContents(b), ['[#0001]\nsecret output'], 'a new session of its own')
    // key B's recall of #0001 reads B's session, which stored the same text under its own id.
    assert.match(JSON.stringify(recall.messages.at(-1)), /#0002 recall #0001/)
  })

  test("a recall never reaches another tenant's results", async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { content: 'stored' },
        { calls: [{ name: 'recall', args: { id: '#0001' } }] },
        { content: 'done' },
      ]),
    )
    await postChat(proxy.url, withResult('call_private', 'only for A'), {
      authorization: 'Bearer key-C',
    })
    await postChat(
      proxy.url,
      { model: 'm', tools: TOOLS, messages: [{ role: 'user', content: 'recall #0001' }] },
      { authorization: 'Bearer key-D' },
    )
    const recallAnswer = chatRequests(upstream.requests)[2].messages.at(-1)
    assert.equal(recallAnswer.role, 'tool')
    assert.match(recallAnswer.content, /No stored result #0001 in this session\./)
    assert.doesNotMatch(JSON.stringify(chatRequests(upstream.requests)[2]), /only for A/)
  })

  test('the session header keeps two conversations with equal messages apart', async () => {
    upstream.requests.length = 0
    upstream.setScript(scriptedModel([{ content: '1' }, { content: '2' }, { content: '3' }]))
    await postChat(proxy.url, withResult('call_x', 'out'), { 'x-session-id': 'one' })
    const second = withResult('call_y', 'other')
    await postChat(proxy.url, second, { 'x-session-id': 'two' })
    second.messages.push(
      { role: 'assistant', content: '2' } as never,
      { role: 'user', content: 'again' } as never,
    )
    await postChat(proxy.url, second, { 'x-session-id': 'two' })
    const requests = chatRequests(upstream.requests)
    assert.deepEqual(toolContents(requests[0]), ['[#0001]\nout'])
    assert.deepEqual(toolContents(requests[1]), ['[#0001]\nother'])
    assert.deepEqual(toolContents(requests[2]), ['[#0001]\nother'])
  })

  test('without a session header a session continues through the messages it knows', async () => {
    upstream.requests.length = 0
    const app = join(project, 'app.ts')
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Read', args: { file_path: app, offset: 1, limit: 20 } }] },
        { calls: [{ name: 'Read', args: { file_path: app, offset: 5, limit: 5 } }] },
        { content: 'ok' },
      ]),
    )
    const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project })
    await agent.ask('read')
    const texts = toolContents(chatRequests(upstream.requests)[2])
    assert.match(
      String(texts[1]),
      /^\[#0002 .* lines 5-9 of 340 sha [0-9a-f]{8}\] Unchanged since #0001, which already shows lines 1-20\.$/,
    )
    assert.deepEqual(prefixViolations(upstream.requests), [])
  })

  test('tool results sent as text parts keep their shape; the first text part carries the rendering', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Bash', args: { command: 'echo hi' } }] },
        { content: 'ok' },
      ]),
    )
    const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project, partsContent: true })
    await agent.ask('say hi')
    const tool = chatRequests(upstream.requests)[1].messages.at(-1)
    assert.deepEqual(tool.content, [{ type: 'text', text: '[#0001]\nhi\n' }])
  })
})

describe('concurrent twins', () => {
  for (const backend of ['sqlite', 'redis'] as const) {
    test(`identical requests at once (${backend}, two replicas) get one id and one rendering`, async () => {
      const upstream = await startFakeUpstream(() => ({ json: chatCompletion({ content: 'ok' }) }))
      const redis = backend === 'redis' ? await startRedis() : undefined
      const spec = redis ? redis.url : 'sqlite::memory:'
      const shared = backend === 'sqlite' ? await createStore(spec, { idleTtlMs: DAY }) : undefined
      const stores = shared
        ? [shared, shared]
        : [await createStore(spec, { idleTtlMs: DAY }), await createStore(spec, { idleTtlMs: DAY })]
      const proxies = [
        await startProxy({ upstreamUrl: upstream.url, store: stores[0]! }),
        await startProxy({ upstreamUrl: upstream.url, store: stores[1]! }),
      ]
      try {
        const body = withResult('call_twin', 'x'.repeat(50_000))
        const replies = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            postChat(proxies[i % 2]!.url, body, { 'x-session-id': 'twins' }),
          ),
        )
        assert.ok(replies.every((r) => r.status === 200))
        const contents = new Set(
          chatRequests(upstream.requests).map((r) => JSON.stringify(toolContents(r))),
        )
        assert.equal(contents.size, 1)
        assert.match([...contents][0]!, /^\["\[#0001\]\\n/)
        // A later request with a second result gets the next id: nothing was skipped.
        const next = withResult('call_twin', 'x'.repeat(50_000))
        next.messages.push(
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_two', type: 'function', function: { name: 'Bash', arguments: '{}' } },
            ],
          } as never,
          { role: 'tool', tool_call_id: 'call_two', content: 'second' } as never,
        )
        await postChat(proxies[0]!.url, next, { 'x-session-id': 'twins' })
        assert.equal(toolContents(chatRequests(upstream.requests).at(-1))[1], '[#0002]\nsecond')
      } finally {
        for (const proxy of proxies) await proxy.close()
        for (const store of new Set(stores)) await store.close()
        await redis?.stop()
        await upstream.close()
      }
    })
  }
})
