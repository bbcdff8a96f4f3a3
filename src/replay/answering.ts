/**
 * The upstream replay sends to: an HTTP server on 127.0.0.1 that keeps each body it is sent and
 * answers "ok" in the shape of the API the path names (Chat Completions, Messages, Responses),
 * as SSE when the request streams, so the proxy runs its real client path on every door.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface AnsweringUpstream {
  /** The base URL the proxy is pointed at. */
  readonly url: string
  /** The bodies received since the last call, in order. */
  take(): string[]
  close(): Promise<void>
}

/** One answer: a JSON body, or the data of its SSE events (with their event names). */
interface Answer {
  readonly json: object
  readonly events: readonly { readonly event?: string; readonly data: object | string }[]
}

const TEXT = 'ok'

function chatAnswer(): Answer {
  const message = { role: 'assistant', content: TEXT }
  const chunk = (delta: object, finish: string | null) => ({
    id: 'replay',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'replay',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })
  return {
    json: {
      id: 'replay',
      object: 'chat.completion',
      created: 0,
      model: 'replay',
      choices: [{ index: 0, message, finish_reason: 'stop' }],
      usage: { prompt_tokens: 0, completion_tokens: 1, total_tokens: 1 },
    },
    events: [{ data: chunk(message, null) }, { data: chunk({}, 'stop') }, { data: '[DONE]' }],
  }
}

function messagesAnswer(): Answer {
  const usage = { input_tokens: 0, output_tokens: 1 }
  const message = {
    id: 'msg_replay',
    type: 'message',
    role: 'assistant',
    model: 'replay',
    content: [{ type: 'text', text: TEXT }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage,
  }
  const named = (data: { readonly type: string } & Record<string, unknown>) => ({
    event: data.type,
    data,
  })
  return {
    json: message,
    events: [
      named({ type: 'message_start', message: { ...message, content: [], stop_reason: null } }),
      named({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      named({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: TEXT } }),
      named({ type: 'content_block_stop', index: 0 }),
      named({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage }),
      named({ type: 'message_stop' }),
    ],
  }
}

function responsesAnswer(): Answer {
  const usage = { input_tokens: 0, output_tokens: 1, total_tokens: 1 }
  const item = {
    type: 'message',
    id: 'msg_replay',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: TEXT, annotations: [] }],
  }
  const base = { id: 'resp_replay', object: 'response', model: 'replay' }
  const done = { ...base, status: 'completed', output: [item], usage }
  const named = (data: { readonly type: string } & Record<string, unknown>, n: number) => ({
    event: data.type,
    data: { ...data, sequence_number: n },
  })
  return {
    json: done,
    events: [
      named(
        { type: 'response.created', response: { ...base, status: 'in_progress', output: [] } },
        0,
      ),
      named({ type: 'response.output_item.added', output_index: 0, item }, 1),
      named({ type: 'response.output_item.done', output_index: 0, item }, 2),
      named({ type: 'response.completed', response: done }, 3),
    ],
  }
}

/** The answer for a request path: the Messages and Responses APIs by their names. */
function answerFor(path: string): Answer {
  if (path.endsWith('/messages')) return messagesAnswer()
  if (path.endsWith('/responses')) return responsesAnswer()
  return chatAnswer()
}

function sse(answer: Answer): string {
  return answer.events
    .map(({ event, data }) => {
      const line = `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`
      return event ? `event: ${event}\n${line}` : line
    })
    .join('')
}

export async function startAnsweringUpstream(): Promise<AnsweringUpstream> {
  let bodies: string[] = []
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      bodies.push(body)
      let stream = false
      try {
        stream = (JSON.parse(body) as { stream?: unknown }).stream === true
      } catch {
        // answered as JSON
      }
      const answer = answerFor((request.url ?? '').split('?')[0]!)
      if (stream) {
        response.writeHead(200, { 'content-type': 'text/event-stream' })
        response.end(sse(answer))
      } else {
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end(JSON.stringify(answer.json))
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    take() {
      const taken = bodies
      bodies = []
      return taken
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
