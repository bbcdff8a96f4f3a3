/**
 * A scripted Anthropic Messages model on top of the fake upstream: Messages JSON, or the event
 * stream (message_start, content blocks, message_delta, message_stop) when the request asks.
 */
import type { FakeResponse, FakeScript, RecordedRequest } from './fake-upstream.js'

export type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }

/** What the scripted model says next: its thinking (extended thinking), text and tool calls. */
export interface ClaudeSay {
  thinking?: { thinking: string; signature: string }
  redacted?: string
  text?: string
  tools?: { name: string; input: Record<string, unknown>; id?: string }[]
}

const USAGE = { input_tokens: 100, output_tokens: 10 }

export function anthropicMessage(content: Block[], id = 'msg_1'): Record<string, unknown> {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: USAGE,
  }
}

/** The stream of a message, its text and tool input split into a few deltas each. */
export function anthropicEvents(content: Block[], id = 'msg_1'): object[] {
  const events: object[] = [
    {
      type: 'message_start',
      message: {
        ...anthropicMessage([], id),
        stop_reason: null,
        usage: { ...USAGE, output_tokens: 1 },
      },
    },
    { type: 'ping' },
  ]
  content.forEach((block, index) => {
    if (block.type === 'thinking') {
      // As the API streams it: an empty block, the thinking in pieces, then its signature.
      const start = { type: 'thinking', thinking: '', signature: '' }
      events.push({ type: 'content_block_start', index, content_block: start })
      for (const part of split(block.thinking))
        events.push({
          type: 'content_block_delta',
          index,
          delta: { type: 'thinking_delta', thinking: part },
        })
      events.push({
        type: 'content_block_delta',
        index,
        delta: { type: 'signature_delta', signature: block.signature },
      })
    } else if (block.type === 'redacted_thinking') {
      events.push({ type: 'content_block_start', index, content_block: block })
    } else if (block.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } })
      for (const part of split(block.text))
        events.push({
          type: 'content_block_delta',
          index,
          delta: { type: 'text_delta', text: part },
        })
    } else {
      events.push({
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      })
      for (const part of split(JSON.stringify(block.input)))
        events.push({
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: part },
        })
    }
    events.push({ type: 'content_block_stop', index })
  })
  events.push({
    type: 'message_delta',
    delta: {
      stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
      stop_sequence: null,
    },
    usage: { output_tokens: 10 },
  })
  events.push({ type: 'message_stop' })
  return events
}

function split(text: string): string[] {
  const parts: string[] = []
  for (let i = 0; i < text.length; i += 7) parts.push(text.slice(i, i + 7))
  return parts.length > 0 ? parts : ['']
}

/** A model that says the planned things in order; a step may read the request. */
export function scriptedClaude(
  plan: readonly (ClaudeSay | ((request: RecordedRequest) => ClaudeSay))[],
): FakeScript {
  let step = 0
  let callNumber = 0
  return (request) => {
    const next = plan[step++]
    if (!next)
      return {
        status: 500,
        body: JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'ran out' } }),
      }
    const say = typeof next === 'function' ? next(request) : next
    const content: Block[] = []
    if (say.thinking) content.push({ type: 'thinking', ...say.thinking })
    if (say.redacted !== undefined) content.push({ type: 'redacted_thinking', data: say.redacted })
    if (say.text !== undefined) content.push({ type: 'text', text: say.text })
    for (const tool of say.tools ?? [])
      content.push({
        type: 'tool_use',
        id: tool.id ?? `toolu_${++callNumber}`,
        name: tool.name,
        input: tool.input,
      })
    const response: FakeResponse = request.json?.stream
      ? { sse: anthropicEvents(content, `msg_${step}`), done: false }
      : { json: anthropicMessage(content, `msg_${step}`) }
    return response
  }
}

/** The Messages requests the upstream received. */
export function messagesRequests(requests: readonly RecordedRequest[]): RecordedRequest[] {
  return requests.filter((r) => r.pathname.endsWith('/messages'))
}

/** The events of an Anthropic SSE body, parsed. */
export function anthropicSse(text: string): any[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n')
      return JSON.parse(data)
    })
}

/** The message a client assembles from the events: its content blocks and stop reason. */
export function assembleMessage(events: readonly any[]): { content: any[]; stop_reason: string } {
  const content: any[] = []
  const json: string[] = []
  let stop_reason = ''
  for (const event of events) {
    if (event.type === 'content_block_start') {
      content[event.index] = structuredClone(event.content_block)
      json[event.index] = ''
    } else if (event.type === 'content_block_delta') {
      const block = content[event.index]
      if (event.delta.type === 'text_delta') block.text += event.delta.text
      else if (event.delta.type === 'thinking_delta') block.thinking += event.delta.thinking
      else if (event.delta.type === 'signature_delta') block.signature = event.delta.signature
      else json[event.index] += event.delta.partial_json
    } else if (event.type === 'content_block_stop') {
      if (json[event.index]) content[event.index].input = JSON.parse(json[event.index]!)
    } else if (event.type === 'message_delta') stop_reason = event.delta.stop_reason
  }
  return { content, stop_reason }
}

/**
 * What the real CLI asks besides Messages (count_tokens, model lists), answered so it goes on;
 * undefined for a Messages request, which the script answers.
 */
export function claudeSideAnswer(request: RecordedRequest): FakeResponse | undefined {
  if (request.path.includes('/count_tokens')) return { json: { input_tokens: 1234 } }
  if (!request.pathname.endsWith('/messages') || !request.json)
    return { json: { data: [], has_more: false } }
  return undefined
}

/**
 * A Messages answer, whole or streamed as the request asks, with input usage growing request by
 * request: the real CLI's "tokens left" reminder then changes every turn.
 */
export function claudeAnswer(
  request: RecordedRequest,
  content: Block[],
  index: number,
): FakeResponse {
  const usage = { input_tokens: 1000 * (index + 1), output_tokens: 10 }
  if (!request.json.stream) return { json: { ...anthropicMessage(content, `msg_${index}`), usage } }
  const events = anthropicEvents(content, `msg_${index}`) as any[]
  events[0].message.usage = { ...usage, output_tokens: 1 }
  return { sse: events, done: false }
}
