/**
 * Bad input (issue 7, item 4): property tests against the real pipeline, over real HTTP, in this
 * process (startProxy in front of the fake upstream). Whatever the client sends — broken JSON,
 * wrong types, NUL, lone surrogates, invalid UTF-8, 100k lines, a 10 MB line — and whatever
 * arguments the model gives recall, the answer is either a 2xx whose tool messages reached the
 * upstream rendered (`[#xxxx…` first), or a 4xx in the OpenAI error shape. Never a 5xx, never a
 * hang, and the proxy keeps serving.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { createStore } from '../../src/store/index.js'
import {
  chatChunks,
  chatCompletion,
  startFakeUpstream,
  type FakeResponse,
  type FakeUpstream,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import { startProxy, type TestProxy } from '../helpers/proxy.js'

const DAY = 86_400_000
const MAX_BODY = 12 * 1024 * 1024
const TOOLS = ['Read', 'Bash', 'Glob', 'Edit', 'Grep'].map((name) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: {} } },
}))
const ID = /^\[#[0-9a-f]{4,}[\] ]/

interface Reply {
  status: number
  contentType: string
  text: string
  json: any
  /** What the upstream received for this request, in order. */
  upstream: RecordedRequest[]
}

let caseNumber = 0

/** Sends raw bytes to the proxy; never waits more than 20 s. */
async function send(
  proxy: TestProxy,
  upstream: FakeUpstream,
  body: string | Buffer,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const tag = `case-${++caseNumber}`
  const response = await fetch(proxy.url + '/v1/chat/completions', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer fuzz-key',
      'x-case': tag,
      ...headers,
    },
    body,
    signal: AbortSignal.timeout(20_000),
  })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    text,
    json,
    upstream: upstream.requests.filter((r) => r.headers['x-case'] === tag),
  }
}

/** The rule every answer obeys: a 4xx in the OpenAI shape, or a 2xx forwarded and rendered. */
function assertSane(reply: Reply, sent: string | Buffer): void {
  assert.ok(
    (reply.status >= 200 && reply.status < 300) || (reply.status >= 400 && reply.status < 500),
    `status ${reply.status}: ${reply.text.slice(0, 500)}`,
  )
  if (reply.status >= 400) {
    assert.match(reply.contentType, /application\/json/)
    assert.equal(typeof reply.json?.error?.message, 'string', reply.text.slice(0, 300))
    assert.equal(typeof reply.json.error.type, 'string')
    assert.equal(typeof reply.json.error.code, 'string')
    assert.doesNotMatch(reply.json.error.message, /\n\s+at /, 'no stack trace')
    return
  }
  assert.ok(reply.upstream.length > 0, 'a 2xx was forwarded')
  const first = reply.upstream[0]!
  const text = (Buffer.isBuffer(sent) ? sent : Buffer.from(sent)).toString('utf8')
  const request = JSON.parse(text)
  const tools = request.tools
  const offers = Array.isArray(tools) && tools.length > 0
  const results = Array.isArray(request.messages) && request.messages.some(isToolMessage)
  if (!offers && !results) {
    // No tools and no results: nothing to shape, so the bytes go as they came.
    assert.equal(first.body, text)
    return
  }
  if (!offers) assert.deepEqual(first.json.tools, tools, 'no tool added to a request without')
  else if (!tools.some((tool: any) => tool?.function?.name === 'recall'))
    assert.equal(first.json.tools.at(-1).function.name, 'recall', 'the proxy added recall')
  for (const message of first.json.messages) {
    if (message?.role !== 'tool') continue
    const content = message.content
    const text =
      typeof content === 'string'
        ? content
        : content.find((part: any) => part?.type === 'text' && typeof part.text === 'string')?.text
    assert.match(String(text), ID, `rendered: ${JSON.stringify(content).slice(0, 200)}`)
  }
}

const isToolMessage = (message: any) => message?.role === 'tool'

/** Answers like a model: SSE when asked to stream, JSON otherwise. */
function okAnswer(request: RecordedRequest): FakeResponse {
  return request.json?.stream === true
    ? { sse: chatChunks({ content: ['o', 'k'] }) }
    : { json: chatCompletion({ content: 'ok' }) }
}

describe('bad input never crashes the pipeline', () => {
  let upstream: FakeUpstream
  let proxy: TestProxy
  before(async () => {
    upstream = await startFakeUpstream(okAnswer)
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      maxBodyBytes: MAX_BODY,
      timeoutMs: 10_000,
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
  })

  test('random chat bodies, valid and broken, with wrong types anywhere: a 2xx rendered or a 4xx', async () => {
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom('', '\u0000', 'a\u0000b', '\r\n', '[#0001] fake id', 'data: [DONE]\n\n'),
    )
    const anything = fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 2 }),
      fc.constant(undefined),
    )
    const args = fc.oneof(
      fc
        .dictionary(
          fc.constantFrom(
            'file_path',
            'path',
            'command',
            'offset',
            'limit',
            'pattern',
            'old_string',
            'new_string',
          ),
          fc.jsonValue({ maxDepth: 1 }),
        )
        .map((v) => JSON.stringify(v)),
      fc.string(),
      fc.constantFrom('{', '{"file_path":', 'null', '[]', '{"offset":-1,"limit":1e308}'),
      anything,
    )
    const call = fc.oneof(
      fc.record({
        id: fc.oneof(fc.constantFrom('c1', 'c2', 'c3'), fc.string(), anything),
        type: fc.constant('function'),
        function: fc.oneof(
          fc.record({
            name: fc.oneof(fc.constantFrom('Read', 'Bash', 'Glob', 'Edit', 'recall'), anything),
            arguments: args,
          }),
          anything,
        ),
      }),
      anything,
    )
    const content = fc.oneof(
      text,
      fc.constant(null),
      fc.array(
        fc.oneof(
          fc.record({ type: fc.constant('text'), text: fc.oneof(text, anything) }),
          fc.record({ type: fc.constant('image_url'), image_url: anything }),
          anything,
        ),
        { maxLength: 3 },
      ),
      anything,
    )
    const message = fc.oneof(
      fc.record(
        {
          role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool'), anything),
          content,
          tool_calls: fc.oneof(fc.array(call, { maxLength: 3 }), anything),
          tool_call_id: fc.oneof(fc.constantFrom('c1', 'c2', 'c3'), anything),
        },
        { requiredKeys: ['role'] },
      ),
      anything,
    )
    // Mostly well-formed conversations: a turn of calls and the results that answer them.
    const conversation = fc
      .record({
        outputs: fc.array(text, { minLength: 1, maxLength: 3 }),
        names: fc.array(fc.constantFrom('Read', 'Bash', 'Glob', 'Edit'), {
          minLength: 3,
          maxLength: 3,
        }),
        args: fc.array(args, { minLength: 3, maxLength: 3 }),
      })
      .map(({ outputs, names, args }) => [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: outputs.map((_, i) => ({
            id: `c${i + 1}`,
            type: 'function',
            function: { name: names[i], arguments: typeof args[i] === 'string' ? args[i] : '{}' },
          })),
        },
        ...outputs.map((output, i) => ({
          role: 'tool',
          tool_call_id: `c${i + 1}`,
          content: output,
        })),
      ])
    // Mostly a chat the pipeline shapes; any field may be missing or of a wrong type.
    const body = fc
      .tuple(
        fc.oneof(
          { weight: 6, arbitrary: conversation },
          { weight: 2, arbitrary: fc.array(message, { maxLength: 6 }) },
          { weight: 1, arbitrary: anything },
        ),
        fc.oneof(
          { weight: 6, arbitrary: fc.constant(TOOLS) },
          { weight: 1, arbitrary: fc.constant([]) },
          { weight: 1, arbitrary: fc.array(anything, { maxLength: 2 }) },
          { weight: 1, arbitrary: anything },
        ),
        fc.record(
          {
            model: fc.oneof(fc.constant('m'), anything),
            stream: fc.oneof(fc.boolean(), anything),
            stream_options: anything,
            ['__proto__' as string]: anything,
            constructor: anything,
          },
          { requiredKeys: [] },
        ),
      )
      .map(([messages, tools, rest]) => ({ ...rest, messages, tools }))
    const bytes = fc.oneof(
      { weight: 6, arbitrary: body.map((b) => JSON.stringify(b) ?? 'null') },
      // Broken JSON: cut anywhere, or a byte changed.
      {
        weight: 2,
        arbitrary: fc
          .tuple(body, fc.nat(), fc.string({ minLength: 1, maxLength: 2 }))
          .map(([b, at, junk]) => {
            const s = JSON.stringify(b) ?? 'null'
            const i = at % (s.length + 1)
            return at % 2 === 0 ? s.slice(0, i) : s.slice(0, i) + junk + s.slice(i + 1)
          }),
      },
      { weight: 1, arbitrary: fc.json() },
      { weight: 1, arbitrary: fc.string({ unit: 'binary' }) },
    )
    await fc.assert(
      fc.asyncProperty(bytes, async (sent) => {
        const reply = await send(proxy, upstream, sent)
        assertSane(reply, sent)
      }),
      { numRuns: 300 },
    )
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  test('tool results with NUL, lone surrogates, invalid UTF-8, binary, 100k lines or one 10 MB line', async () => {
    const wrap = (contentJson: string) =>
      '{"model":"m","tools":' +
      JSON.stringify(TOOLS) +
      ',"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,' +
      '"tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{\\"command\\":\\"x\\"}"}}]},' +
      '{"role":"tool","tool_call_id":"c1","content":' +
      contentJson +
      '}]}'
    const binary = Array.from({ length: 4096 }, (_, i) =>
      String.fromCharCode((i * 7919) % 256),
    ).join('')
    const cases: { name: string; body: string | Buffer; expect: 'rendered' | 'either' }[] = [
      {
        name: 'NUL bytes',
        body: wrap(JSON.stringify('a\u0000b\u0000\u0000c')),
        expect: 'rendered',
      },
      { name: 'a lone high surrogate', body: wrap('"x\\ud800y"'), expect: 'rendered' },
      { name: 'a lone low surrogate at the end', body: wrap('"x\\udfff"'), expect: 'rendered' },
      {
        name: 'invalid UTF-8 bytes',
        body: Buffer.concat([
          Buffer.from(wrap('"A@@B"').split('@@')[0]!),
          Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xc0, 0xaf, 0xed, 0xa0, 0x80]),
          Buffer.from(wrap('"A@@B"').split('@@')[1]!),
        ]),
        expect: 'rendered',
      },
      { name: 'binary-looking text', body: wrap(JSON.stringify(binary)), expect: 'rendered' },
      {
        name: '100k lines',
        body: wrap(JSON.stringify(Array.from({ length: 100_000 }, (_, i) => `l${i}`).join('\n'))),
        expect: 'rendered',
      },
      {
        name: 'one 10 MB line',
        body: wrap(JSON.stringify('x'.repeat(10 * 1024 * 1024))),
        expect: 'rendered',
      },
      {
        name: 'parts with no text part',
        body: wrap('[{"type":"image_url","image_url":{"url":"data:,"}}]'),
        expect: 'rendered',
      },
    ]
    for (const c of cases) {
      const started = performance.now()
      const reply = await send(proxy, upstream, c.body)
      const ms = performance.now() - started
      assertSane(reply, c.body)
      if (c.expect === 'rendered')
        assert.equal(reply.status, 200, `${c.name}: ${reply.text.slice(0, 300)}`)
      assert.ok(ms < 15_000, `${c.name} took ${Math.round(ms)} ms`)
      if (reply.status !== 200) continue
      const tool = reply.upstream[0]!.json.messages.at(-1)
      const rendered = typeof tool.content === 'string' ? tool.content : tool.content[0].text
      assert.match(rendered, ID, c.name)
      if (c.name === '100k lines' || c.name === 'one 10 MB line') {
        assert.match(rendered, /elided, full output #[0-9a-f]+\]/, c.name)
        assert.ok(rendered.length < 40_000, `${c.name}: ${rendered.length} chars`)
      }
      if (c.name === 'NUL bytes') assert.ok(rendered.endsWith('a\u0000b\u0000\u0000c'))
      if (c.name === 'invalid UTF-8 bytes') assert.match(rendered, /A\ufffd+.*B$/su)
    }
  })

  test('a chunked body over --max-body-mb is a 413 and never forwarded; one just under is served', async () => {
    const before = upstream.requests.length
    const chunk = new Uint8Array(1024 * 1024).fill(0x20)
    let sentChunks = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sentChunks++ === 0) controller.enqueue(new TextEncoder().encode('{"messages":[],"x":"'))
        else if (sentChunks < 16) controller.enqueue(chunk)
        else controller.close()
      },
    })
    const response = await fetch(proxy.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
      signal: AbortSignal.timeout(20_000),
    } as RequestInit)
    assert.equal(response.status, 413)
    // The unread rest of the body must not be taken for the next request on this connection.
    assert.equal(response.headers.get('connection'), 'close')
    assert.equal(((await response.json()) as any).error.code, 'body_too_large')
    assert.equal(upstream.requests.length, before)

    const head = '{"model":"m","messages":[{"role":"user","content":"'
    const tail = '"}]}'
    const exact = head + 'y'.repeat(MAX_BODY - head.length - tail.length) + tail
    assert.equal(Buffer.byteLength(exact), MAX_BODY)
    const reply = await send(proxy, upstream, exact)
    assert.equal(reply.status, 200)
  })

  test('the proxy still serves afterwards', async () => {
    const health = await fetch(proxy.url + '/healthz')
    assert.equal(health.status, 200)
    const body = JSON.stringify({
      model: 'm',
      tools: TOOLS,
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'after', type: 'function', function: { name: 'Bash', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'after', content: 'fine' },
      ],
    })
    const reply = await send(proxy, upstream, body, { 'x-session-id': 'after-fuzz' })
    assert.equal(reply.status, 200)
    assert.equal(reply.upstream[0]!.json.messages.at(-1).content, '[#0001]\nfine')
  })
})

describe('recall arguments the model makes up', () => {
  let upstream: FakeUpstream
  let proxy: TestProxy
  before(async () => {
    upstream = await startFakeUpstream(okAnswer)
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      timeoutMs: 10_000,
    })
    // Other sessions' results: another tenant's, and the same tenant's under another session id.
    for (const [key, session] of [
      ['victim-key', 'victim'],
      ['fuzz-key', 'neighbour'],
    ] as const) {
      const reply = await send(proxy, upstream, resultBody('VICTIM-CANARY\n'.repeat(5), false), {
        authorization: `Bearer ${key}`,
        'x-session-id': session,
      })
      assert.equal(reply.status, 200)
    }
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
  })

  test('negative, huge, NaN, string or missing offsets and limits, odd ids, ids of other sessions: answered, never leaked', async () => {
    const number = fc.oneof(
      fc.integer(),
      fc.double(),
      fc.constantFrom(-1, 0, 1, 2, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, -1e308),
      fc.constantFrom('NaN', 'Infinity', '-5', '1e400', 'abc', '', ' 3 '),
      fc.constantFrom(null, true, [], {}),
    )
    const id = fc.oneof(
      fc.constantFrom('#0001', '#0002', '#0003', '0001', '#1', '#0', '#-1', '#ffffffffffffffff'),
      fc.constantFrom('#zzzz', '', '#', '#0001 and more', '[#0001]', '#00010000000000000000001'),
      fc.string(),
      fc.integer(),
      fc.constantFrom(null, [], {}),
    )
    const args = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .record({ id, offset: number, limit: number }, { requiredKeys: [] })
          .map((a) => JSON.stringify(a)),
      },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          '{"id":"#0001","offset":NaN}',
          '{"id":"#0001","limit":-Infinity}',
          '{"id":"#0001"',
          '',
          'null',
          '"#0001"',
          '[1,2]',
        ),
      },
      { weight: 1, arbitrary: fc.string() },
    )
    const calls = fc.array(args, { minLength: 1, maxLength: 3 })
    await fc.assert(
      fc.asyncProperty(calls, fc.boolean(), async (argumentsList, stream) => {
        let step = 0
        upstream.setScript((request) => {
          if (step++ > 0) return okAnswer(request)
          const toolCalls = argumentsList.map((a, i) => ({
            id: `r${i}`,
            name: 'recall',
            arguments: a,
          }))
          return request.json?.stream === true
            ? {
                sse: chatChunks({
                  toolCalls: toolCalls.map((c) => ({ ...c, arguments: [c.arguments] })),
                }),
              }
            : { json: chatCompletion({ toolCalls }) }
        })
        const sent = resultBody('mine\n'.repeat(3), stream)
        const reply = await send(proxy, upstream, sent, {
          'x-session-id': `fuzz-${caseNumber}`,
        })
        assertSane(reply, sent)
        assert.equal(reply.status, 200, reply.text.slice(0, 300))
        assert.equal(reply.upstream.length, 2, 'the recall was answered and the model asked again')
        const second = reply.upstream[1]!
        assert.doesNotMatch(second.body, /VICTIM-CANARY/)
        const answers = second.json.messages.slice(-argumentsList.length)
        answers.forEach((answer: any, i: number) => {
          assert.equal(answer.role, 'tool')
          assert.equal(answer.tool_call_id, `r${i}`)
          assert.match(answer.content, new RegExp(`^\\[#000${i + 2}[\\] ]`))
        })
        // The client sees the final answer, not the recall.
        if (stream) assert.doesNotMatch(reply.text, /"recall"/)
        else assert.equal(reply.json.choices[0].message.content, 'ok')
      }),
      { numRuns: 150 },
    )
  })
})

/** A conversation with one Bash result, new to the proxy. */
function resultBody(output: string, stream: boolean): string {
  return JSON.stringify({
    model: 'm',
    stream,
    tools: TOOLS,
    messages: [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'Bash', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: output },
    ],
  })
}
