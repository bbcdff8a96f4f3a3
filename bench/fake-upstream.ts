/**
 * The benchmark's upstream: a minimal node:http server that reads the whole request body and
 * answers at once with a fixed small chat completion, or a short SSE stream when the body asks
 * for one. It never parses the body, so the proxy's cost dominates every measurement.
 *
 *   node --import tsx bench/fake-upstream.ts [port]
 *
 * Prints `fake-upstream listening on http://127.0.0.1:PORT` once it listens. GET /stats answers
 * {"requests":N,"bytes":N,"streams":N}: what reached it, to check every request went through.
 */
import { createServer } from 'node:http'

const STREAM = Buffer.from('"stream":true')
const WINDOW = 64 * 1024

const message = {
  role: 'assistant',
  content: 'Let me read the test file.',
  tool_calls: [
    {
      id: 'call_bench_0001',
      type: 'function',
      function: { name: 'Read', arguments: '{"file_path":"/work/project/test/upstream.test.ts"}' },
    },
  ],
}
const usage = { prompt_tokens: 1000, completion_tokens: 12, total_tokens: 1012 }
const COMPLETION = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'bench-model',
    choices: [{ index: 0, message, finish_reason: 'tool_calls' }],
    usage,
  }),
)

function chunk(delta: object, finish: string | null = null, extra: object = {}): string {
  const body = {
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'bench-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  }
  return `data: ${JSON.stringify(body)}\n\n`
}
const call = message.tool_calls[0]!
// Text first (it flows to the client at once), then a tool call in pieces, usage, [DONE].
const EVENTS = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Let me ' }),
  chunk({ content: 'read the ' }),
  chunk({ content: 'test file.' }),
  chunk({
    tool_calls: [
      { index: 0, id: call.id, type: 'function', function: { name: 'Read', arguments: '' } },
    ],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"file_path":' } }] }),
  chunk({
    tool_calls: [{ index: 0, function: { arguments: '"/work/project/test/upstream.test.ts"}' } }],
  }),
  chunk({}, 'tool_calls'),
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [], usage })}\n\n`,
  'data: [DONE]\n\n',
].map((event) => Buffer.from(event))

const stats = { requests: 0, bytes: 0, streams: 0 }

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(stats))
    return
  }
  // Keep the first and the last 64 KB only: enough to find "stream":true without a copy.
  let head: Buffer | undefined
  const last: Buffer[] = []
  let lastBytes = 0
  let bytes = 0
  req.on('data', (data: Buffer) => {
    bytes += data.length
    if (!head) head = data.subarray(0, WINDOW)
    last.push(data)
    lastBytes += data.length
    while (last.length > 1 && lastBytes - last[0]!.length >= WINDOW)
      lastBytes -= last.shift()!.length
  })
  req.on('end', () => {
    stats.requests++
    stats.bytes += bytes
    const tail = Buffer.concat(last).subarray(-WINDOW)
    const stream = tail.includes(STREAM) || (head?.includes(STREAM) ?? false)
    if (!stream) {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(COMPLETION.length),
      })
      res.end(COMPLETION)
      return
    }
    stats.streams++
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    for (const event of EVENTS) res.write(event)
    res.end()
  })
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  process.stdout.write(`fake-upstream listening on http://127.0.0.1:${port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
process.on('SIGINT', () => process.exit(0))
