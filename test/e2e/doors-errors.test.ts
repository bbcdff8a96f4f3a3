/**
 * Every front door refuses a bad request the same way, in its own API's error shape: broken
 * JSON, a body nested past the guard, a body of the wrong shape. Nothing reaches the upstream.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStore, type Store } from '../../src/store/index.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { startProxy, type TestProxy } from '../helpers/proxy.js'

const DOORS = [
  { path: '/v1/chat/completions', label: 'chat completions request', anthropic: false },
  { path: '/v1/responses', label: 'Responses API request', anthropic: false },
  { path: '/v1/messages', label: 'Messages API request', anthropic: true },
]

function deep(levels: number): string {
  return '['.repeat(levels) + ']'.repeat(levels)
}

describe('bad requests on every door', () => {
  let upstream: FakeUpstream
  let store: Store
  let proxy: TestProxy
  before(async () => {
    upstream = await startFakeUpstream()
    store = await createStore('memory:', { idleTtlMs: 86_400_000 })
    proxy = await startProxy({ upstreamUrl: upstream.url, store })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
    await store.close()
  })

  for (const door of DOORS) {
    const post = async (body: string) => {
      const response = await fetch(proxy.url + door.path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
        body,
      })
      return { status: response.status, json: (await response.json()) as any }
    }
    const message = (json: any): string => {
      if (door.anthropic) {
        assert.equal(json.type, 'error')
        assert.equal(json.error.type, 'invalid_request_error')
      } else {
        assert.equal(json.error.type, 'invalid_request_error')
        assert.equal(json.error.code, 'invalid_request')
      }
      return json.error.message
    }

    test(`${door.path}: broken JSON, deep nesting and a wrong shape are 400s in its shape`, async () => {
      const broken = await post('{"model": "m", "tools": [')
      assert.equal(broken.status, 400)
      assert.match(message(broken.json), /not valid JSON/)

      // 10,000 levels in a field the proxy never reads: refused before any parse.
      const nested = await post(`{"model":"m","metadata":{"x":${deep(10_000)}},"messages":[]}`)
      assert.equal(nested.status, 400)
      assert.match(message(nested.json), /nests deeper than 512 levels/)

      const wrong = await post('{"model":"m","messages":7,"input":7,"tools":[{}]}')
      assert.equal(wrong.status, 400)
      assert.match(message(wrong.json), new RegExp(`^not a ${door.label}: `))
      assert.equal(upstream.requests.length, 0, 'nothing reached the upstream')
    })
  }

  test('/v1/messages: a chat `tool` message is a 400 in its shape, streaming or not', async () => {
    for (const stream of [false, true])
      for (const content of ['x', [{ type: 'text', text: 'x' }]]) {
        const response = await fetch(proxy.url + '/v1/messages', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
          body: JSON.stringify({
            model: 'm',
            max_tokens: 5,
            stream,
            messages: [
              { role: 'user', content: 'hi' },
              { role: 'tool', content },
            ],
          }),
        })
        const json = (await response.json()) as any
        assert.equal(response.status, 400, JSON.stringify(json))
        assert.equal(json.error.type, 'invalid_request_error')
        assert.match(json.error.message, /messages\[1\]: unexpected role "tool"/)
      }
    assert.equal(upstream.requests.length, 0, 'nothing reached the upstream')
  })

  test("a path below /v1/messages (count_tokens) answers the proxy's own errors in Anthropic's shape", async () => {
    // Nothing listens upstream: a 502; with --auth and no secret: a 401. Both as Claude Code reads them.
    const lines: string[] = []
    const secured = await startProxy({
      upstreamUrl: 'http://127.0.0.1:9/v1',
      store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
      authSecret: 's3cret',
      log: createLogger('info', (line) => void lines.push(line)),
    })
    try {
      const post = (headers: Record<string, string>) =>
        fetch(secured.url + '/v1/messages/count_tokens', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': 'k', ...headers },
          body: '{}',
        })
      const refused = await post({ 'user-agent': 'claude-cli/2.1.332 (external, cli)' })
      assert.equal(refused.status, 401)
      assert.equal(((await refused.json()) as any).error.type, 'authentication_error')
      // The refusal is in the log, once a minute per reason and client, the secret never.
      await post({ 'user-agent': 'claude-cli/2.1.332 (external, cli)' })
      await post({ 'user-agent': 'claude-cli/2.1.332', 'x-lembas-auth': 'guess-CANARY' })
      const refusals = lines
        .filter((line) => line.includes('"auth-refused"'))
        .map((l) => JSON.parse(l))
      assert.deepEqual(
        refusals.map((r) => [r.reason, r.agent, r.path]),
        [
          ['missing', 'claude-cli/2.1.332', '/v1/messages/count_tokens'],
          ['wrong', 'claude-cli/2.1.332', '/v1/messages/count_tokens'],
        ],
      )
      assert.ok(!lines.some((line) => line.includes('CANARY')))
      const unreachable = await post({ 'x-lembas-auth': 's3cret' })
      assert.equal(unreachable.status, 502)
      const body = (await unreachable.json()) as any
      assert.equal(body.type, 'error')
      assert.equal(body.error.type, 'api_error')
    } finally {
      await secured.close()
    }
  })
})
