import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { decodeSse, encodeSseData, SSE_DONE, type SseEvent } from '../../src/wire/sse.js'
import { LembasError } from '../../src/errors.js'

async function collect(events: AsyncIterable<SseEvent>): Promise<SseEvent[]> {
  const result: SseEvent[] = []
  for await (const event of events) result.push(event)
  return result
}

async function* chunksOf(bytes: Uint8Array, ...cuts: number[]): AsyncGenerator<Uint8Array> {
  let start = 0
  for (const cut of [...cuts, bytes.length]) {
    yield bytes.subarray(start, cut)
    start = cut
  }
}

async function* bytesOneByOne(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let index = 0; index < bytes.length; index++) yield bytes.subarray(index, index + 1)
}

const decode = (text: string) => collect(decodeSse(chunksOf(new TextEncoder().encode(text))))

// A stream as OpenAI sends it, with CRLF framing in one place, a comment, 2- and 4-byte
// characters, two parallel tool calls, a usage chunk and [DONE].
const payloads = [
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}',
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Café 👋 "},"finish_reason":null}]}',
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}',
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"path\\":\\"é.md\\"}"}}]},"finish_reason":null}]}',
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"bash","arguments":"{\\"cmd\\":\\"ls\\"}"}}]},"finish_reason":null}]}',
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
  '{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}',
  SSE_DONE,
]
const rawStream =
  ': keep-alive\n\n' +
  payloads
    .map((payload, index) => (index === 1 ? `data: ${payload}\r\n\r\n` : `data: ${payload}\n\n`))
    .join('')
const expected = payloads.map((data) => ({ data }))
const rawBytes = new TextEncoder().encode(rawStream)

describe('decodeSse', () => {
  test('decodes an OpenAI stream in one chunk', async () => {
    assert.deepEqual(await collect(decodeSse(chunksOf(rawBytes))), expected)
  })

  test('gives the same events when split into two chunks at every byte offset', async () => {
    for (let cut = 1; cut < rawBytes.length; cut++) {
      const events = await collect(decodeSse(chunksOf(rawBytes, cut)))
      assert.deepEqual(events, expected, `split at byte ${cut}`)
    }
  })

  test('gives the same events from 1-byte chunks', async () => {
    assert.deepEqual(await collect(decodeSse(bytesOneByOne(rawBytes))), expected)
  })

  test('keeps a multi-byte character split across three chunks', async () => {
    const bytes = new TextEncoder().encode('data: 👋\n\n')
    assert.deepEqual(await collect(decodeSse(chunksOf(bytes, 7, 8, 9))), [{ data: '👋' }])
  })

  test('splits lines on \\n, \\r\\n and \\r alike', async () => {
    assert.deepEqual(await decode('data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\r\n'), [
      { data: 'a' },
      { data: 'b' },
      { data: 'c' },
      { data: 'd' },
    ])
  })

  test('treats \\r then \\n in the next chunk as one line break', async () => {
    const bytes = new TextEncoder().encode('data: a\r\ndata: b\r\n\r\n')
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.deepEqual(
        await collect(decodeSse(chunksOf(bytes, cut))),
        [{ data: 'a\nb' }],
        `cut ${cut}`,
      )
    }
  })

  test('joins data lines with \\n and keeps the event type', async () => {
    assert.deepEqual(await decode('event: error\ndata: line 1\ndata: line 2\n\n'), [
      { event: 'error', data: 'line 1\nline 2' },
    ])
  })

  test('strips one space after the colon, no more', async () => {
    assert.deepEqual(await decode('data:x\n\ndata:  y\n\n'), [{ data: 'x' }, { data: ' y' }])
  })

  test('reads a field without a colon as an empty value', async () => {
    assert.deepEqual(await decode('data\n\ndata\ndata\n\n'), [{ data: '' }, { data: '\n' }])
  })

  test('ignores comments, id, retry and unknown fields', async () => {
    assert.deepEqual(await decode(': ping - 2\nid: 7\nretry: 10\nfoo: bar\ndata: x\n\n'), [
      { data: 'x' },
    ])
  })

  test('dispatches nothing for a blank line without data, and resets the event type', async () => {
    assert.deepEqual(await decode('event: ping\n\n\n\ndata: x\n\n'), [{ data: 'x' }])
  })

  test('dispatches an event left without its blank line at end of stream', async () => {
    assert.deepEqual(await decode('data: a\n\ndata: b'), [{ data: 'a' }, { data: 'b' }])
    assert.deepEqual(await decode('data: a\n\ndata: b\n'), [{ data: 'a' }, { data: 'b' }])
  })

  test('drops a leading byte-order mark', async () => {
    assert.deepEqual(await decode('\uFEFFdata: x\n\n'), [{ data: 'x' }])
  })

  test('rejects an event longer than maxEventChars', async () => {
    const bytes = new TextEncoder().encode(`data: ${'x'.repeat(100)}`)
    await assert.rejects(
      collect(decodeSse(chunksOf(bytes), { maxEventChars: 50 })),
      (error: unknown) => error instanceof LembasError && error.kind === 'upstream_bad_response',
    )
    const lines = new TextEncoder().encode('data: aaaa\n'.repeat(20))
    await assert.rejects(collect(decodeSse(chunksOf(lines), { maxEventChars: 50 })), LembasError)
  })
})

describe('encodeSseData', () => {
  test('frames one line of data', () => {
    assert.equal(encodeSseData('{"a":1}'), 'data: {"a":1}\n\n')
  })

  test('splits multi-line data into several data lines', () => {
    assert.equal(encodeSseData('a\nb\r\nc'), 'data: a\ndata: b\ndata: c\n\n')
  })

  test('round-trips through decodeSse', async () => {
    const data = ['x', '', ' leading space', 'two\nlines', SSE_DONE]
    assert.deepEqual(
      await decode(data.map(encodeSseData).join('')),
      data.map((item) => ({ data: item })),
    )
  })
})
