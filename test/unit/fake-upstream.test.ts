import assert from 'node:assert/strict'
import { after, afterEach, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { decodeSse, type SseEvent } from '../../src/wire/sse.js'
import {
  chatChunks,
  chatCompletion,
  rawSse,
  startFakeUpstream,
  type FakeUpstream,
} from '../helpers/fake-upstream.js'

const dispatcher = new Agent({ keepAliveTimeout: 10 })
after(() => dispatcher.close())

let fake: FakeUpstream
afterEach(() => fake?.close())

function post(path: string, body: unknown, options: { signal?: AbortSignal } = {}) {
  return request(`${fake.url}${path}`, {
    dispatcher,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(body),
    signal: options.signal,
  })
}

async function events(body: AsyncIterable<Uint8Array>): Promise<SseEvent[]> {
  const result: SseEvent[] = []
  for await (const event of decodeSse(body)) result.push(event)
  return result
}

async function until(condition: () => boolean): Promise<void> {
  for (let tries = 0; !condition(); tries++) {
    if (tries > 200) throw new Error('condition not met within 2 s')
    await sleep(10)
  }
}

describe('startFakeUpstream', () => {
  test('answers a default chat completion and records the request', async () => {
    fake = await startFakeUpstream()
    assert.match(fake.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/)
    const response = await post('/chat/completions?trace=1', { model: 'm', messages: [] })
    assert.equal(response.statusCode, 200)
    assert.match(String(response.headers['content-type']), /application\/json/)
    const body = (await response.body.json()) as ReturnType<typeof chatCompletion>
    assert.equal(body.object, 'chat.completion')
    assert.deepEqual(body.choices[0]?.message, {
      role: 'assistant',
      content: 'ok',
      refusal: null,
      annotations: [],
    })
    assert.deepEqual(body.usage, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })

    const [recorded] = fake.requests
    assert.equal(recorded?.method, 'POST')
    assert.equal(recorded?.path, '/v1/chat/completions?trace=1')
    assert.equal(recorded?.headers['authorization'], 'Bearer sk-test')
    assert.equal(recorded?.body, '{"model":"m","messages":[]}')
    assert.deepEqual(recorded?.json, { model: 'm', messages: [] })
    assert.equal(recorded?.aborted, false)
  })

  test('passes each request and its index to the script; setScript replaces it', async () => {
    fake = await startFakeUpstream((recorded, index) => ({
      json: { index, echo: recorded.json },
      status: 201,
      headers: { 'X-Request-Id': `req_${index}` },
    }))
    const first = await post('/a', { n: 1 })
    assert.equal(first.statusCode, 201)
    assert.equal(first.headers['x-request-id'], 'req_0')
    assert.deepEqual(await first.body.json(), { index: 0, echo: { n: 1 } })

    fake.setScript(async (_recorded, index) => ({ json: { replaced: index } }))
    const second = await post('/b', { n: 2 })
    assert.deepEqual(await second.body.json(), { replaced: 1 })
    assert.equal(fake.requests.length, 2)
  })

  test('records a body that is not JSON as text, with json undefined', async () => {
    fake = await startFakeUpstream()
    await (
      await request(`${fake.url}/x`, { dispatcher, method: 'POST', body: 'caf\u00e9 {' })
    ).body.text()
    assert.equal(fake.requests[0]?.body, 'café {')
    assert.equal(fake.requests[0]?.json, undefined)
  })

  test('streams SSE: objects as JSON, strings raw, then [DONE]', async () => {
    fake = await startFakeUpstream(() => ({ sse: [{ a: 1 }, 'plain text', 'two\nlines'] }))
    const response = await post('/chat/completions', {})
    assert.equal(response.headers['content-type'], 'text/event-stream')
    assert.deepEqual(await events(response.body), [
      { data: '{"a":1}' },
      { data: 'plain text' },
      { data: 'two\nlines' },
      { data: '[DONE]' },
    ])
  })

  test('streams SSE without [DONE] when done is false', async () => {
    fake = await startFakeUpstream(() => ({ sse: ['x'], done: false }))
    assert.deepEqual(await events((await post('/c', {})).body), [{ data: 'x' }])
  })

  test('waits delayMs between events', async () => {
    fake = await startFakeUpstream(() => ({ sse: ['a', 'b'], delayMs: 300 }))
    const started = Date.now()
    const arrivals: number[] = []
    for await (const _event of decodeSse((await post('/c', {})).body))
      arrivals.push(Date.now() - started)
    assert.equal(arrivals.length, 3)
    assert.ok(arrivals[0]! < 250, `first event at ${arrivals[0]} ms`)
    assert.ok(arrivals[2]! >= 590, `[DONE] at ${arrivals[2]} ms`)
  })

  test('cutAfter destroys the socket after N events, without [DONE], and is not an abort', async () => {
    fake = await startFakeUpstream(() => ({ sse: ['a', 'b', 'c'], cutAfter: 2 }))
    const received: SseEvent[] = []
    const response = await post('/c', {})
    await assert.rejects(async () => {
      for await (const event of decodeSse(response.body)) received.push(event)
    }, /other side closed|socket|terminated/i)
    assert.deepEqual(received, [{ data: 'a' }, { data: 'b' }])
    assert.equal(fake.requests[0]?.aborted, false)
  })

  test('answers a status with a plain body', async () => {
    fake = await startFakeUpstream(() => ({
      status: 429,
      body: 'slow down',
      headers: { 'retry-after': '2' },
    }))
    const response = await post('/c', {})
    assert.equal(response.statusCode, 429)
    assert.equal(response.headers['retry-after'], '2')
    assert.match(String(response.headers['content-type']), /text\/plain/)
    assert.equal(await response.body.text(), 'slow down')
  })

  test('hang never answers, and records the client going away', async () => {
    fake = await startFakeUpstream(() => ({ hang: true }))
    const controller = new AbortController()
    const pending = post('/c', {}, { signal: controller.signal })
    await until(() => fake.requests.length === 1)
    await sleep(50)
    assert.equal(fake.requests[0]?.aborted, false)
    controller.abort()
    await assert.rejects(pending, { name: 'AbortError' })
    await until(() => fake.requests[0]?.aborted === true)
  })

  test('close ends hanging requests without marking them aborted', async () => {
    const hanging = await startFakeUpstream(() => ({ hang: true }))
    fake = await startFakeUpstream()
    const pending = request(`${hanging.url}/c`, { dispatcher, method: 'POST', body: '{}' })
    await until(() => hanging.requests.length === 1)
    await hanging.close()
    await assert.rejects(pending)
    assert.equal(hanging.requests[0]?.aborted, false)
  })

  test('raw writes bytes verbatim on the socket', async () => {
    fake = await startFakeUpstream(() => ({ raw: rawSse('data: {"broken":\n\ndata: ok\n\n') }))
    const response = await post('/c', {})
    assert.equal(response.statusCode, 200)
    assert.equal(response.headers['content-type'], 'text/event-stream')
    assert.deepEqual(await events(response.body), [{ data: '{"broken":' }, { data: 'ok' }])
  })

  test('raw can send a response that is not HTTP at all', async () => {
    fake = await startFakeUpstream(() => ({ raw: 'garbage\r\n\r\n' }))
    await assert.rejects(post('/c', {}))
  })

  test('a throwing script answers 500 with the error', async () => {
    fake = await startFakeUpstream(() => {
      throw new Error('no such case')
    })
    const response = await post('/c', {})
    assert.equal(response.statusCode, 500)
    assert.match(await response.body.text(), /no such case/)
  })
})

describe('chatCompletion', () => {
  test('builds a text answer', () => {
    assert.deepEqual(
      chatCompletion({
        content: 'hi',
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      }),
      {
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 1_700_000_000,
        model: 'fake-model',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'hi', refusal: null, annotations: [] },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        service_tier: 'default',
        system_fingerprint: 'fp_fake',
      },
    )
  })

  test('builds a tool-call answer with null content and finish_reason tool_calls', () => {
    const completion = chatCompletion({
      toolCalls: [{ id: 'call_1', name: 'read', arguments: '{"p":1}' }],
    })
    assert.deepEqual(completion.choices[0], {
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'read', arguments: '{"p":1}' } },
        ],
        annotations: [],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    })
    assert.equal('usage' in completion, false)
  })
})

describe('chatChunks', () => {
  const envelope = {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'fake-model',
    service_tier: 'default',
    system_fingerprint: 'fp_fake',
  }
  const choice = (delta: object, finish_reason: string | null = null) => ({
    ...envelope,
    choices: [{ index: 0, delta, logprobs: null, finish_reason }],
  })

  test('streams text: role chunk, deltas, finish chunk', () => {
    assert.deepEqual(chatChunks({ content: ['Hel', 'lo'] }), [
      choice({ role: 'assistant', content: '', refusal: null }),
      choice({ content: 'Hel' }),
      choice({ content: 'lo' }),
      choice({}, 'stop'),
    ])
  })

  test('streams tool calls like OpenAI: role merged into the first call, fragments by index', () => {
    const chunks = chatChunks({
      toolCalls: [
        { id: 'call_a', name: 'read', arguments: ['{"p"', ':1}'] },
        { id: 'call_b', name: 'ls', arguments: ['{}'] },
      ],
    })
    assert.deepEqual(chunks, [
      choice({
        role: 'assistant',
        content: null,
        tool_calls: [
          { index: 0, id: 'call_a', type: 'function', function: { name: 'read', arguments: '' } },
        ],
        refusal: null,
      }),
      choice({ tool_calls: [{ index: 0, function: { arguments: '{"p"' } }] }),
      choice({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }),
      choice({
        tool_calls: [
          { index: 1, id: 'call_b', type: 'function', function: { name: 'ls', arguments: '' } },
        ],
      }),
      choice({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] }),
      choice({}, 'tool_calls'),
    ])
  })

  test('streams text then a tool call, each call opening with its own header delta', () => {
    const chunks = chatChunks({
      content: ['Let me look.'],
      toolCalls: [{ id: 'call_a', name: 'read', arguments: [] }],
      finishReason: 'length',
    })
    assert.deepEqual(chunks, [
      choice({ role: 'assistant', content: '', refusal: null }),
      choice({ content: 'Let me look.' }),
      choice({
        tool_calls: [
          { index: 0, id: 'call_a', type: 'function', function: { name: 'read', arguments: '' } },
        ],
      }),
      choice({}, 'length'),
    ])
  })

  test('with usage, every chunk carries usage: null and a last chunk has choices: [] and usage', () => {
    const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }
    const chunks = chatChunks({ content: ['x'], usage })
    assert.equal(chunks.length, 4)
    for (const chunk of chunks.slice(0, 3)) assert.equal(chunk['usage'], null)
    assert.deepEqual(chunks[3], { ...envelope, choices: [], usage })
  })

  test('round-trips through the fake as an SSE stream', async () => {
    const chunks = chatChunks({
      content: ['é', '👋'],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    })
    fake = await startFakeUpstream(() => ({ sse: chunks }))
    const received = await events((await post('/chat/completions', { stream: true })).body)
    assert.deepEqual(
      received.map((event) => (event.data === '[DONE]' ? event.data : JSON.parse(event.data))),
      [...chunks, '[DONE]'],
    )
  })
})
