/**
 * A scripted OpenAI-compatible server on 127.0.0.1 for tests: a real node:http server, so the
 * client under test goes through real sockets, keep-alive, timeouts and disconnects.
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { encodeSseData } from '../../src/wire/sse.js'

export type RecordedRequest = {
  method: string
  /** As received, with the query string: '/v1/chat/completions?x=1'. */
  path: string
  /** The path without its query string: what a door is told by ('/v1/messages?beta=true'). */
  pathname: string
  headers: Record<string, string | string[] | undefined>
  /** The raw body bytes, decoded as UTF-8. */
  body: string
  /** The parsed body, when it is JSON. */
  json?: any
  /** True once the client went away before the response finished (not when the script cut it). */
  aborted: boolean
}

export type FakeResponse =
  | { json: unknown; status?: number; headers?: Record<string, string> }
  | {
      /** Objects are sent as JSON, strings as the raw data payload. */
      sse: (string | object)[]
      delayMs?: number
      /** Destroy the socket after this many events, without [DONE]. */
      cutAfter?: number
      /** Append `data: [DONE]`; default true. */
      done?: boolean
      status?: number
      headers?: Record<string, string>
    }
  | { status: number; body: string; headers?: Record<string, string> }
  /** Never answers; the request stays open until the client goes away. */
  | { hang: true }
  /** Written verbatim to the socket (status line, headers and all), which is then closed. */
  | { raw: string }

export type FakeScript = (
  request: RecordedRequest,
  index: number,
) => FakeResponse | Promise<FakeResponse>

export type FakeUpstream = {
  /** The base URL, ending in /v1. */
  url: string
  requests: RecordedRequest[]
  setScript(script: FakeScript): void
  close(): Promise<void>
}

export type FakeUsage = { prompt_tokens: number; completion_tokens: number; total_tokens: number }

const defaultScript: FakeScript = () => ({
  json: chatCompletion({
    content: 'ok',
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  }),
})

/** Starts the fake on an ephemeral port; the script decides each answer, in arrival order. */
export async function startFakeUpstream(script: FakeScript = defaultScript): Promise<FakeUpstream> {
  let currentScript = script
  const requests: RecordedRequest[] = []
  const shutdown = new AbortController()

  const server = createServer((incoming, response) => {
    void handle(incoming, response).catch((error: unknown) => {
      if (!response.headersSent && !response.destroyed) {
        response.writeHead(500, { 'content-type': 'text/plain' })
        response.end(`fake upstream script failed: ${String(error)}`)
      } else {
        response.destroy()
      }
    })
  })

  async function handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of incoming) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks).toString('utf8')
    const recorded: RecordedRequest = {
      method: incoming.method ?? '',
      path: incoming.url ?? '',
      pathname: (incoming.url ?? '').split('?')[0]!,
      headers: incoming.headers,
      body,
      json: parseJson(body),
      aborted: false,
    }
    const index = requests.push(recorded) - 1
    let cutOnPurpose = false
    response.on('close', () => {
      if (!response.writableFinished && !cutOnPurpose && !shutdown.signal.aborted) {
        recorded.aborted = true
      }
    })

    const answer = await currentScript(recorded, index)
    if (response.destroyed) return
    if ('hang' in answer) return
    if ('raw' in answer) {
      cutOnPurpose = true
      response.socket?.end(answer.raw)
      return
    }
    if ('sse' in answer) {
      await writeSse(response, answer, shutdown.signal, () => (cutOnPurpose = true))
      return
    }
    if ('json' in answer) {
      response.writeHead(answer.status ?? 200, {
        'content-type': 'application/json',
        ...lowerCaseKeys(answer.headers),
      })
      response.end(JSON.stringify(answer.json))
      return
    }
    response.writeHead(answer.status, {
      'content-type': 'text/plain; charset=utf-8',
      ...lowerCaseKeys(answer.headers),
    })
    response.end(answer.body)
  }

  let closing: Promise<void> | undefined
  async function closeServer(): Promise<void> {
    shutdown.abort()
    const closed = once(server, 'close')
    server.close()
    server.closeAllConnections()
    await closed
  }

  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    setScript(next) {
      currentScript = next
    },
    close() {
      closing ??= closeServer()
      return closing
    },
  }
}

/** A raw HTTP response carrying `body` as an SSE stream, for `{ raw }` (malformed streams). */
export function rawSse(body: string, status = 200): string {
  return (
    `HTTP/1.1 ${status} OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n` +
    `connection: close\r\n\r\n${body}`
  )
}

/**
 * Events each under its `type` as the SSE event's name (Anthropic's and the Responses API's
 * grammar), then `tail` as it is: a stream answered whole, as a server wrote it.
 */
export function namedSse(events: readonly object[], tail = ''): FakeResponse {
  const body = events
    .map(
      (event) => `event: ${(event as { type: string }).type}\ndata: ${JSON.stringify(event)}\n\n`,
    )
    .join('')
  return { status: 200, body: body + tail, headers: { 'content-type': 'text/event-stream' } }
}

/** llama.cpp's answer to a prompt past its window (on every API it serves), its status a number. */
export function llamaCppTooLong(): FakeResponse {
  return {
    status: 400,
    body: JSON.stringify({
      error: {
        code: 400,
        message: 'the request exceeds the available context size',
        type: 'exceed_context_size_error',
      },
    }),
    headers: { 'content-type': 'application/json' },
  }
}

/** Answers in order, one a request from now on (the last again past the end); how many came. */
export function answersInTurn(
  upstream: FakeUpstream,
  answers: readonly (() => FakeResponse)[],
): () => number {
  let n = 0
  const start = upstream.requests.length
  upstream.setScript(() => answers[Math.min(n++, answers.length - 1)]!())
  return () => upstream.requests.length - start
}

/** Streams the events; `markCut` runs just before a cutAfter destroys the socket. */
async function writeSse(
  response: ServerResponse,
  answer: Extract<FakeResponse, { sse: unknown }>,
  shutdown: AbortSignal,
  markCut: () => void,
): Promise<void> {
  response.writeHead(answer.status ?? 200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    ...lowerCaseKeys(answer.headers),
  })
  response.flushHeaders()
  const payloads = answer.sse.map((event) =>
    typeof event === 'string' ? event : JSON.stringify(event),
  )
  if (answer.cutAfter === undefined && answer.done !== false) payloads.push('[DONE]')
  const last =
    answer.cutAfter === undefined ? payloads.length : Math.min(answer.cutAfter, payloads.length)

  for (let index = 0; index < last; index++) {
    if (index > 0 && answer.delayMs) {
      try {
        await sleep(answer.delayMs, undefined, { signal: shutdown })
      } catch {
        return
      }
    }
    if (response.destroyed) return
    // Wait for the flush, so a cut right after still delivers every event before it.
    await new Promise<void>((resolve) =>
      response.write(encodeSseData(payloads[index]!), () => resolve()),
    )
  }
  if (answer.cutAfter !== undefined) {
    markCut()
    response.socket?.destroy()
    return
  }
  response.end()
}

function parseJson(body: string): unknown {
  if (body === '') return undefined
  try {
    return JSON.parse(body)
  } catch {
    return undefined
  }
}

function lowerCaseKeys(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
  )
}

// ── Builders of exact OpenAI wire shapes (captured gpt-4o streams, 2024–2025) ──

export type FakeCompletionOptions = {
  content?: string
  /** A thinking model's reasoning (DeepSeek's `reasoning_content`). */
  reasoning?: string
  toolCalls?: { id: string; name: string; arguments: string }[]
  usage?: FakeUsage
  finishReason?: string
  id?: string
  model?: string
  created?: number
}

export type FakeChunksOptions = {
  /** Text deltas, in order. */
  content?: string[]
  /** Reasoning deltas (DeepSeek's `reasoning_content`), streamed before the text. */
  reasoning?: string[]
  /** Each call's argument fragments, in order; calls are streamed one after another. */
  toolCalls?: { id: string; name: string; arguments: string[] }[]
  /** When given, every chunk carries `usage: null` and a last `choices: []` chunk carries it. */
  usage?: FakeUsage
  finishReason?: string
  id?: string
  model?: string
  created?: number
}

const FAKE_ID = 'chatcmpl-fake'
const FAKE_MODEL = 'fake-model'
const FAKE_CREATED = 1_700_000_000
const FAKE_FINGERPRINT = 'fp_fake'

/**
 * A non-streaming chat completion, as OpenAI sends it.
 * @example chatCompletion({ content: 'ok' }).choices[0].message // { role: 'assistant', content: 'ok', refusal: null, annotations: [] }
 */
export function chatCompletion(options: FakeCompletionOptions = {}) {
  const toolCalls = options.toolCalls ?? []
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: options.content ?? (toolCalls.length > 0 ? null : ''),
    refusal: null,
  }
  if (options.reasoning !== undefined) message['reasoning_content'] = options.reasoning
  if (toolCalls.length > 0) {
    message['tool_calls'] = toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }))
  }
  message['annotations'] = []
  return {
    id: options.id ?? FAKE_ID,
    object: 'chat.completion',
    created: options.created ?? FAKE_CREATED,
    model: options.model ?? FAKE_MODEL,
    choices: [
      {
        index: 0,
        message,
        logprobs: null,
        finish_reason: options.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
      },
    ],
    ...(options.usage === undefined ? {} : { usage: options.usage }),
    service_tier: 'default',
    system_fingerprint: FAKE_FINGERPRINT,
  }
}

/**
 * The `chat.completion.chunk` objects of one streamed answer, as OpenAI sends them: the role
 * (merged into the first tool-call delta when there is no text), text deltas, per call a
 * delta with index, id, type and name and empty arguments, then argument fragments; a final
 * chunk with an empty delta and finish_reason; the usage chunk if `usage` is given.
 */
export function chatChunks(options: FakeChunksOptions = {}): Record<string, unknown>[] {
  const content = options.content ?? []
  const toolCalls = options.toolCalls ?? []
  const chunk = (choices: unknown[]) => ({
    id: options.id ?? FAKE_ID,
    object: 'chat.completion.chunk',
    created: options.created ?? FAKE_CREATED,
    model: options.model ?? FAKE_MODEL,
    service_tier: 'default',
    system_fingerprint: FAKE_FINGERPRINT,
    choices,
    ...(options.usage === undefined ? {} : { usage: null }),
  })
  const deltaChunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    chunk([{ index: 0, delta, logprobs: null, finish_reason: finishReason }])
  const callHeader = (call: { id: string; name: string }, index: number) => ({
    index,
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: '' },
  })

  const chunks: Record<string, unknown>[] = []
  const [firstCall] = toolCalls
  const roleMergesWithCall =
    content.length === 0 && firstCall !== undefined && (options.reasoning ?? []).length === 0
  chunks.push(
    roleMergesWithCall
      ? deltaChunk({
          role: 'assistant',
          content: null,
          tool_calls: [callHeader(firstCall, 0)],
          refusal: null,
        })
      : deltaChunk({ role: 'assistant', content: '', refusal: null }),
  )
  for (const thought of options.reasoning ?? [])
    chunks.push(deltaChunk({ content: null, reasoning_content: thought }))
  for (const text of content) chunks.push(deltaChunk({ content: text }))
  toolCalls.forEach((call, index) => {
    if (index > 0 || !roleMergesWithCall)
      chunks.push(deltaChunk({ tool_calls: [callHeader(call, index)] }))
    for (const fragment of call.arguments) {
      chunks.push(deltaChunk({ tool_calls: [{ index, function: { arguments: fragment } }] }))
    }
  })
  chunks.push(
    deltaChunk({}, options.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop')),
  )
  if (options.usage !== undefined) chunks.push({ ...chunk([]), usage: options.usage })
  return chunks
}
