/**
 * The benchmark's upstream: a minimal node:http server that reads the whole request body and
 * answers at once with a fixed small chat completion, or a short SSE stream when the body asks
 * for one. It never parses the body, so the proxy's cost dominates every measurement. A request
 * to …/messages gets the same answer as an Anthropic Messages API message (or its event stream),
 * one to …/responses as an OpenAI Responses API response (or its event stream).
 *
 *   node --import tsx bench/fake-upstream.ts [port]
 *
 * Prints `fake-upstream listening on http://127.0.0.1:PORT` once it listens. GET /stats answers
 * {"requests":N,"bytes":N,"streams":N,"messages":N,"responses":N}: what reached it, to check
 * every request went through.
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

// The same answer (a sentence, then a Read call) in the Anthropic Messages API's shape.
const toolUse = {
  type: 'tool_use',
  id: 'toolu_bench_0001',
  name: 'Read',
  input: { file_path: '/work/project/test/upstream.test.ts' },
}
const anthropicMessage = {
  id: 'msg_bench',
  type: 'message',
  role: 'assistant',
  model: 'bench-model',
  content: [{ type: 'text', text: 'Let me read the test file.' }, toolUse],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: {
    input_tokens: 1000,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: 12,
  },
}
const MESSAGE = Buffer.from(JSON.stringify(anthropicMessage))
const sse = (event: { type: string }) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`
const MESSAGE_EVENTS = [
  {
    type: 'message_start',
    message: {
      ...anthropicMessage,
      content: [],
      stop_reason: null,
      usage: { ...anthropicMessage.usage, output_tokens: 1 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'ping' },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'read the ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'test file.' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'content_block_start', index: 1, content_block: { ...toolUse, input: {} } },
  {
    type: 'content_block_delta',
    index: 1,
    delta: { type: 'input_json_delta', partial_json: '{"file_path":' },
  },
  {
    type: 'content_block_delta',
    index: 1,
    delta: { type: 'input_json_delta', partial_json: '"/work/project/test/upstream.test.ts"}' },
  },
  { type: 'content_block_stop', index: 1 },
  {
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { output_tokens: 12 },
  },
  { type: 'message_stop' },
].map((event) => Buffer.from(sse(event)))

// And in the Responses API's shape: a message item, then a function call (Codex's shell).
const outputMessage = {
  type: 'message',
  id: 'msg_bench',
  status: 'completed',
  role: 'assistant',
  content: [{ type: 'output_text', text: 'Let me read the test file.', annotations: [] }],
}
const shellArgs = '{"command":["bash","-lc","cat test/upstream.test.ts"]}'
const functionCall = {
  type: 'function_call',
  id: 'fc_bench',
  status: 'completed',
  call_id: 'call_bench_0001',
  name: 'shell',
  arguments: shellArgs,
}
const responsesUsage = {
  input_tokens: 1000,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 12,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 1012,
}
const response = {
  id: 'resp_bench',
  object: 'response',
  created_at: 1_700_000_000,
  status: 'completed',
  model: 'bench-model',
  output: [outputMessage, functionCall],
  usage: responsesUsage,
}
const RESPONSE = Buffer.from(JSON.stringify(response))
let sequence = 0
const numbered = (event: { type: string }) => ({ ...event, sequence_number: sequence++ })
const inProgress = { ...response, status: 'in_progress', output: [], usage: null }
const part = { type: 'output_text', text: '', annotations: [] }
const textAt = { item_id: outputMessage.id, output_index: 0, content_index: 0 }
const callAt = { item_id: functionCall.id, output_index: 1 }
const RESPONSE_EVENTS = [
  { type: 'response.created', response: inProgress },
  { type: 'response.in_progress', response: inProgress },
  {
    type: 'response.output_item.added',
    output_index: 0,
    item: { ...outputMessage, status: 'in_progress', content: [] },
  },
  { type: 'response.content_part.added', ...textAt, part },
  { type: 'response.output_text.delta', ...textAt, delta: 'Let me ' },
  { type: 'response.output_text.delta', ...textAt, delta: 'read the ' },
  { type: 'response.output_text.delta', ...textAt, delta: 'test file.' },
  { type: 'response.output_text.done', ...textAt, text: 'Let me read the test file.' },
  { type: 'response.content_part.done', ...textAt, part: outputMessage.content[0] },
  { type: 'response.output_item.done', output_index: 0, item: outputMessage },
  {
    type: 'response.output_item.added',
    output_index: 1,
    item: { ...functionCall, status: 'in_progress', arguments: '' },
  },
  { type: 'response.function_call_arguments.delta', ...callAt, delta: shellArgs.slice(0, 20) },
  { type: 'response.function_call_arguments.delta', ...callAt, delta: shellArgs.slice(20) },
  { type: 'response.function_call_arguments.done', ...callAt, arguments: shellArgs },
  { type: 'response.output_item.done', output_index: 1, item: functionCall },
  { type: 'response.completed', response },
].map((event) => Buffer.from(sse(numbered(event))))

const stats = { requests: 0, bytes: 0, streams: 0, messages: 0, responses: 0 }

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
    const path = (req.url ?? '').split('?')[0]!
    const door = path.endsWith('/messages')
      ? 'messages'
      : path.endsWith('/responses')
        ? 'responses'
        : 'chat'
    if (door !== 'chat') stats[door]++
    if (!stream) {
      const body = door === 'messages' ? MESSAGE : door === 'responses' ? RESPONSE : COMPLETION
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(body.length),
      })
      res.end(body)
      return
    }
    stats.streams++
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const events =
      door === 'messages' ? MESSAGE_EVENTS : door === 'responses' ? RESPONSE_EVENTS : EVENTS
    for (const event of events) res.write(event)
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
