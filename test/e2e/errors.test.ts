import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { request as httpRequest } from 'node:http'
import { createStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import {
  chatChunks,
  chatCompletion,
  rawSse,
  startFakeUpstream,
  type FakeUpstream,
} from '../helpers/fake-upstream.js'
import {
  chatWithResults,
  postChat,
  requestLines,
  sseData,
  startProxy,
  type TestProxy,
} from '../helpers/proxy.js'
import { createLogger } from '../../src/log.js'

const DAY = 86_400_000
const TOOLS = [
  { type: 'function', function: { name: 'Bash', parameters: { type: 'object', properties: {} } } },
]
const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  tools: TOOLS,
  ...extra,
})

/** A streamed answer of 50 slow chunks, left by the client after its first. */
async function leaveMidStream(url: string, upstream: FakeUpstream): Promise<void> {
  upstream.setScript(() => ({
    sse: chatChunks({ content: Array.from({ length: 50 }, (_, i) => `w${i} `) }),
    delayMs: 40,
  }))
  const controller = new AbortController()
  const response = await fetch(url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chat({ stream: true })),
    signal: controller.signal,
  })
  await response.body!.getReader().read()
  controller.abort()
}

function assertOpenAIError(json: any, code: string): void {
  assert.equal(typeof json?.error?.message, 'string')
  assert.equal(typeof json.error.type, 'string')
  assert.equal(json.error.code, code)
}

describe('errors reach the client in the OpenAI shape', () => {
  let upstream: FakeUpstream
  let proxy: TestProxy
  let store: Store
  before(async () => {
    upstream = await startFakeUpstream()
    store = await createStore('memory:', { idleTtlMs: DAY })
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store,
      maxBodyBytes: 1024 * 1024,
      timeoutMs: 500,
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
  })

  test('malformed JSON is a 400 and nothing is forwarded', async () => {
    upstream.requests.length = 0
    const reply = await postChat(proxy.url, '{"messages": [')
    assert.equal(reply.status, 400)
    assertOpenAIError(reply.json, 'invalid_request')
    assert.equal(upstream.requests.length, 0)
  })

  test('a body that is not a chat request is a 400 naming the field', async () => {
    for (const body of [
      { model: 'm' },
      { messages: [{ content: 'no role' }] },
      { messages: [{ role: 'tool', content: 'x' }] },
    ]) {
      const reply = await postChat(proxy.url, body)
      assert.equal(reply.status, 400)
      assertOpenAIError(reply.json, 'invalid_request')
      assert.match(reply.json.error.message, /messages|role|tool_call_id/)
    }
    assert.equal(upstream.requests.length, 0)
  })

  test('nesting too deep for a rewrite is a 400, not a crash', async () => {
    const deep = '['.repeat(20_000) + ']'.repeat(20_000)
    const reply = await postChat(
      proxy.url,
      `{"messages":[{"role":"user","content":"x","extra":${deep}}],"tools":[]}`,
    )
    assert.equal(reply.status, 400)
    assert.match(reply.json.error.message, /nests deeper/)
  })

  test('a body over the limit is a 413', async () => {
    const reply = await postChat(
      proxy.url,
      chat({ messages: [{ role: 'user', content: 'x'.repeat(2 * 1024 * 1024) }] }),
    )
    assert.equal(reply.status, 413)
    assertOpenAIError(reply.json, 'body_too_large')
  })

  test('an upstream 429 comes back with its status, body and Retry-After', async () => {
    upstream.setScript(() => ({
      status: 429,
      body: JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }),
      headers: { 'retry-after': '7', 'content-type': 'application/json' },
    }))
    for (const stream of [false, true]) {
      const reply = await postChat(proxy.url, chat({ stream }))
      assert.equal(reply.status, 429)
      assert.equal(reply.headers.get('retry-after'), '7')
      assert.equal(reply.json.error.message, 'slow down')
    }
  })

  test('an upstream that does not answer in time is a 504', async () => {
    upstream.setScript(() => ({ hang: true }))
    const reply = await postChat(proxy.url, chat())
    assert.equal(reply.status, 504)
    assertOpenAIError(reply.json, 'upstream_timeout')
  })

  test('a stream cut mid-way ends with an error event, and the client is not left hanging', async () => {
    upstream.setScript(() => ({ sse: chatChunks({ content: ['a', 'b', 'c', 'd'] }), cutAfter: 2 }))
    const reply = await postChat(proxy.url, chat({ stream: true }))
    assert.equal(reply.status, 200)
    const data = sseData(reply.text)
    const last = JSON.parse(data.at(-1)!)
    assert.equal(typeof last.error.message, 'string')
    assert.ok(!data.includes('[DONE]'))
  })

  test('malformed SSE from the upstream becomes an error event', async () => {
    upstream.setScript(() => ({
      raw: rawSse(
        'data: {"id":"x","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: {broken\n\n',
      ),
    }))
    const reply = await postChat(proxy.url, chat({ stream: true }))
    const data = sseData(reply.text)
    assert.equal(JSON.parse(data[0]!).choices[0].delta.content, 'hi')
    assert.equal(JSON.parse(data.at(-1)!).error.code, 'upstream_bad_response')
  })

  test('a client that goes away aborts the upstream request', async () => {
    upstream.requests.length = 0
    upstream.setScript(() => ({ hang: true }))
    const controller = new AbortController()
    const pending = fetch(proxy.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat({ stream: true })),
      signal: controller.signal,
    }).catch(() => undefined)
    for (let i = 0; i < 50 && upstream.requests.length === 0; i++) await sleep(20)
    controller.abort()
    await pending
    for (let i = 0; i < 50 && !upstream.requests[0]?.aborted; i++) await sleep(20)
    assert.equal(upstream.requests[0]?.aborted, true)
  })

  test('a client that goes away mid-stream aborts the upstream stream', async () => {
    upstream.requests.length = 0
    await leaveMidStream(proxy.url, upstream)
    for (let i = 0; i < 100 && !upstream.requests[0]?.aborted; i++) await sleep(20)
    assert.equal(upstream.requests[0]?.aborted, true)
  })

  test('other /v1 routes pass through unchanged', async () => {
    upstream.requests.length = 0
    upstream.setScript((request) =>
      request.path === '/v1/models'
        ? { json: { object: 'list', data: [{ id: 'm', object: 'model' }] } }
        : { json: { echoed: request.body }, status: 201 },
    )
    const models = await fetch(proxy.url + '/v1/models', { headers: { authorization: 'Bearer k' } })
    assert.equal(models.status, 200)
    assert.deepEqual(await models.json(), { object: 'list', data: [{ id: 'm', object: 'model' }] })
    assert.equal(upstream.requests[0]!.headers.authorization, 'Bearer k')
    const body = '{"input":"text","model":"e"}'
    // node:http, since fetch refuses a Connection header and undici rewrites it.
    const embed = await rawPost(proxy.url + '/v1/embeddings?x=1', body, {
      'content-type': 'application/json',
      connection: 'keep-alive, x-secret',
      'x-secret': 's',
    })
    assert.equal(embed.status, 201)
    assert.deepEqual(JSON.parse(embed.text), { echoed: body })
    assert.equal(upstream.requests[1]!.path, '/v1/embeddings?x=1')
    assert.equal(
      upstream.requests[1]!.headers['x-secret'],
      undefined,
      'a header named in Connection is hop-by-hop',
    )
  })

  test('a request without tools is forwarded byte for byte', async () => {
    upstream.requests.length = 0
    upstream.setScript(() => ({
      json: {
        choices: [
          { index: 0, message: { role: 'assistant', content: 'hey' }, finish_reason: 'stop' },
        ],
      },
    }))
    const raw = '{"model":"m",   "messages":[{"role":"user","content":"hi"}]}'
    const reply = await postChat(proxy.url, raw)
    assert.equal(reply.json.choices[0].message.content, 'hey')
    assert.equal(upstream.requests[0]!.body, raw)
  })

  test('healthz answers 200 while the store answers', async () => {
    const response = await fetch(proxy.url + '/healthz')
    assert.equal(response.status, 200)
    assert.deepEqual(await response.json(), {
      ok: true,
      store: 'memory',
      upstreams: [{ route: '*', url: upstream.url }],
    })
  })
})

describe('a dead upstream or store', () => {
  test('an upstream that refuses connections is a 502 naming it', async () => {
    const port = await freePort()
    const store = await createStore('memory:', { idleTtlMs: DAY })
    const proxy = await startProxy({ upstreamUrl: `http://127.0.0.1:${port}/v1`, store })
    try {
      const reply = await postChat(proxy.url, chat())
      assert.equal(reply.status, 502)
      assertOpenAIError(reply.json, 'upstream_unreachable')
      assert.match(reply.json.error.message, /refused/)
    } finally {
      await proxy.close()
    }
  })

  test('a store that does not answer gives 503 with Retry-After, and healthz says so', async () => {
    const upstream = await startFakeUpstream()
    const store = await createStore('memory:', { idleTtlMs: DAY })
    const proxy = await startProxy({ upstreamUrl: upstream.url, store })
    await store.close()
    try {
      const reply = await postChat(
        proxy.url,
        chat({
          messages: [
            { role: 'user', content: 'hi' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'c1', type: 'function', function: { name: 'Bash', arguments: '{}' } },
              ],
            },
            { role: 'tool', tool_call_id: 'c1', content: 'out' },
          ],
        }),
      )
      assert.equal(reply.status, 503)
      assert.equal(reply.headers.get('retry-after'), '1')
      assertOpenAIError(reply.json, 'store_unavailable')
      assert.equal(upstream.requests.length, 0, 'never forwarded half-rendered')
      const health = await fetch(proxy.url + '/healthz')
      assert.equal(health.status, 503)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

function rawPost(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }))
    })
    request.on('error', reject)
    request.end(body)
  })
}

describe('a client that leaves is its own abort, not a failure', () => {
  let upstream: FakeUpstream
  let proxy: TestProxy
  const lines: string[] = []
  before(async () => {
    upstream = await startFakeUpstream()
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      log: createLogger('info', (line) => void lines.push(line)),
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
  })

  test('a body cut off mid-upload: no internal error logged, the next request answered', async () => {
    lines.length = 0
    const { port } = new URL(proxy.url)
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', 'content-length': 200_000 },
      })
      req.on('error', () => resolve())
      req.write('{"model":"m","messages":[{"role":"user","content":"' + 'x'.repeat(50_000))
      setTimeout(() => req.destroy(), 100)
    })
    await sleep(100)
    const answer = await postChat(proxy.url, chat())
    assert.equal(answer.status, 200)
    const levels = lines.map((line) => JSON.parse(line)).filter((l) => l.level !== 'info')
    assert.deepEqual(levels, [])
  })

  test('a stream the client left before its end is logged and counted as 499, like a whole answer', async () => {
    lines.length = 0
    await leaveMidStream(proxy.url, upstream)
    for (let i = 0; i < 100 && requestLines(lines).length === 0; i++) await sleep(20)
    assert.deepEqual(
      requestLines(lines).map((l) => [l.stream, l.status]),
      [[true, 499]],
    )
  })
})

describe('the round after a recall breaks off', () => {
  test('a whole answer framed by the connection’s close, cut: a 502 in the door’s shape, not the cut bytes', async () => {
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
    })
    try {
      const recall = [{ id: 'r1', name: 'recall', arguments: '{"id":"#0001"}' }]
      upstream.setScript((request) =>
        request.json.messages.at(-1).tool_call_id === 'r1'
          ? {
              raw: 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{"id":"chatcmpl-1","obj',
            }
          : { json: chatCompletion({ toolCalls: recall }) },
      )
      const answer = await postChat(proxy.url, chatWithResults([{ id: 'c1', output: 'a.ts' }]))
      assert.equal(answer.status, 502, answer.text)
      assertOpenAIError(answer.json, 'upstream_bad_response')
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})
