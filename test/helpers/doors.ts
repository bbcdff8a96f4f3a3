/**
 * The proxy's three front doors (chat completions, Responses, Anthropic Messages) behind one
 * shape, for tests that run the same session through each: a small agent client that keeps its
 * visible history in the door's own wire form, the fake model's answers in that door's JSON and
 * SSE forms, and the tool results an upstream request carries.
 */
import { randomUUID } from 'node:crypto'
import { assembleStream } from './agent.js'
import {
  anthropicEvents,
  anthropicMessage,
  anthropicSse,
  assembleMessage,
} from './fake-anthropic.js'
import type { Block } from './fake-anthropic.js'
import { responsesEvents, responsesEventsOf, responsesJson } from './fake-responses.js'
import {
  chatChunks,
  chatCompletion,
  type FakeResponse,
  type RecordedRequest,
} from './fake-upstream.js'

export type DoorName = 'chat' | 'responses' | 'messages'

/** One tool call, as the model makes it and as the client sees it. */
export interface DoorCall {
  id: string
  name: string
  args: Record<string, unknown>
}

/** What the model says in one answer: text, tool calls, or both. */
export interface DoorSay {
  text?: string
  calls?: DoorCall[]
}

/** What the client got back: the text (joined) and the tool calls, in order. */
export interface DoorAnswer {
  status: number
  text: string
  calls: DoorCall[]
  raw: string
}

export interface DoorClient {
  /** The client's visible history, in the door's wire form. */
  readonly history: any[]
  user(text: string): void
  /** Posts the whole history to `proxyUrl`; on a 200 appends the answer to the history. */
  send(proxyUrl: string): Promise<DoorAnswer>
  /** Appends the outputs of the last answer's calls, one per call, in order. */
  results(calls: readonly DoorCall[], outputs: readonly string[]): void
}

export interface ClientOptions {
  readonly stream: boolean
  readonly session?: string
  readonly credentials?: Record<string, string>
}

export interface Door {
  readonly name: DoorName
  /** How the upstream path of this door ends, and the history array of its requests. */
  readonly upstreamPath: string
  readonly historyField: string
  /**
   * A client on a session of its own (the door's usual way of naming it), streaming or not;
   * `session` names it instead, `credentials` replace the door's usual key headers.
   */
  client(options: ClientOptions): DoorClient
  /** The fake model's answer in this door's shape: SSE when the request streams. */
  respond(request: RecordedRequest, say: DoorSay, n: number): FakeResponse
  /** The texts of the tool results an upstream request carries, in order. */
  results(request: RecordedRequest): string[]
  /** The request's parts besides the history that a prompt cache also keys on. */
  fixedParts(request: RecordedRequest): string
}

const BASH_DESCRIPTION = 'Executes a given bash command'
const BASH_SCHEMA = {
  type: 'object',
  properties: { command: { type: 'string', description: 'The command to execute' } },
  required: ['command'],
}

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; text: string; json: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, text, json }
}

function parseArgs(json: string): Record<string, unknown> {
  try {
    return JSON.parse(json || '{}')
  } catch {
    return { unparsed: json }
  }
}

function split(text: string, size: number): string[] {
  const parts: string[] = []
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size))
  return parts.length > 0 ? parts : ['']
}

function firstText(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) {
    const part = content.find((p: any) => typeof p?.text === 'string')
    return part ? part.text : ''
  }
  return ''
}

// ── POST /v1/chat/completions ──

const CHAT_TOOLS = [
  {
    type: 'function',
    function: { name: 'Bash', description: BASH_DESCRIPTION, parameters: BASH_SCHEMA },
  },
]

export const chatDoor: Door = {
  name: 'chat',
  upstreamPath: '/chat/completions',
  historyField: 'messages',
  client({ stream, session = randomUUID(), credentials }) {
    const history: any[] = [{ role: 'system', content: 'You are a careful coding agent.' }]
    return {
      history,
      user(text) {
        history.push({ role: 'user', content: text })
      },
      async send(proxyUrl) {
        const reply = await post(
          proxyUrl + '/v1/chat/completions',
          { model: 'test-model', messages: history, tools: CHAT_TOOLS, stream },
          { ...(credentials ?? { authorization: 'Bearer test-key' }), 'x-session-id': session },
        )
        if (reply.status !== 200)
          return { status: reply.status, text: '', calls: [], raw: reply.text }
        const message = stream ? assembleStream(reply.text) : reply.json.choices[0].message
        const assistant: any = { role: 'assistant', content: message.content ?? null }
        if (message.tool_calls?.length) assistant.tool_calls = message.tool_calls
        history.push(assistant)
        const calls = (message.tool_calls ?? []).map((call: any) => ({
          id: call.id,
          name: call.function.name,
          args: parseArgs(call.function.arguments),
        }))
        return { status: 200, text: message.content ?? '', calls, raw: reply.text }
      },
      results(calls, outputs) {
        calls.forEach((call, i) =>
          history.push({ role: 'tool', tool_call_id: call.id, content: outputs[i] }),
        )
      },
    }
  },
  respond(request, say) {
    const calls = (say.calls ?? []).map((call) => ({
      id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.args),
    }))
    if (request.json?.stream) {
      return {
        sse: chatChunks({
          content: say.text === undefined ? [] : split(say.text, 7),
          toolCalls: calls.map((call) => ({ ...call, arguments: split(call.arguments, 7) })),
        }),
      }
    }
    return { json: chatCompletion({ content: say.text, toolCalls: calls }) }
  },
  results(request) {
    return (request.json?.messages ?? [])
      .filter((m: any) => m.role === 'tool')
      .map((m: any) => firstText(m.content))
  },
  fixedParts(request) {
    return JSON.stringify({ tools: request.json?.tools })
  },
}

// ── POST /v1/responses ──

const RESPONSES_TOOLS = [
  {
    type: 'function',
    name: 'Bash',
    description: BASH_DESCRIPTION,
    parameters: BASH_SCHEMA,
    strict: false,
  },
]

function responsesOutput(say: DoorSay, n: number): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = []
  if (say.text !== undefined)
    items.push({
      type: 'message',
      id: `msg_${n}`,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: say.text, annotations: [] }],
    })
  ;(say.calls ?? []).forEach((call, i) =>
    items.push({
      type: 'function_call',
      id: `fc_${n}_${i}`,
      status: 'completed',
      call_id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.args),
    }),
  )
  return items
}

export const responsesDoor: Door = {
  name: 'responses',
  upstreamPath: '/responses',
  historyField: 'input',
  client({ stream, session = `codex-${randomUUID()}`, credentials }) {
    const history: any[] = []
    return {
      history,
      user(text) {
        history.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] })
      },
      async send(proxyUrl) {
        const reply = await post(
          proxyUrl + '/v1/responses',
          {
            model: 'gpt-test',
            instructions: 'You are Codex.',
            tools: RESPONSES_TOOLS,
            input: history,
            stream,
            store: false,
            prompt_cache_key: session,
          },
          credentials ?? { authorization: 'Bearer test-key' },
        )
        if (reply.status !== 200)
          return { status: reply.status, text: '', calls: [], raw: reply.text }
        let output: any[]
        if (stream) {
          const completed = responsesEventsOf(reply.text).filter(
            (e) => e.type === 'response.completed',
          )
          if (completed.length !== 1)
            throw new Error(`${completed.length} response.completed events: ${reply.text}`)
          output = completed[0].response.output
        } else output = reply.json.output
        history.push(...output)
        const text = output
          .filter((item) => item.type === 'message')
          .flatMap((item) => item.content.map((part: any) => part.text ?? ''))
          .join('')
        const calls = output
          .filter((item) => item.type === 'function_call')
          .map((item) => ({ id: item.call_id, name: item.name, args: parseArgs(item.arguments) }))
        return { status: 200, text, calls, raw: reply.text }
      },
      results(calls, outputs) {
        calls.forEach((call, i) =>
          history.push({ type: 'function_call_output', call_id: call.id, output: outputs[i] }),
        )
      },
    }
  },
  respond(request, say, n) {
    const output = responsesOutput(say, n)
    const id = `resp_${n}`
    return request.json?.stream
      ? { sse: responsesEvents(id, output), done: false }
      : { json: responsesJson(id, output) }
  },
  results(request) {
    return (request.json?.input ?? [])
      .filter((item: any) => item.type === 'function_call_output')
      .map((item: any) => firstText(item.output))
  },
  fixedParts(request) {
    return JSON.stringify({ instructions: request.json?.instructions, tools: request.json?.tools })
  },
}

// ── POST /v1/messages ──

const MESSAGES_TOOLS = [{ name: 'Bash', description: BASH_DESCRIPTION, input_schema: BASH_SCHEMA }]
const MESSAGES_SYSTEM = [
  { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
]

export const messagesDoor: Door = {
  name: 'messages',
  upstreamPath: '/messages',
  historyField: 'messages',
  client({ stream, session = randomUUID(), credentials }) {
    // Claude Code's own form: the session's uuid at the end of metadata.user_id.
    const user = `user_abc_account__session_${session}`
    const history: any[] = []
    return {
      history,
      user(text) {
        history.push({ role: 'user', content: [{ type: 'text', text }] })
      },
      async send(proxyUrl) {
        const reply = await post(
          proxyUrl + '/v1/messages',
          {
            model: 'claude-test',
            max_tokens: 1024,
            system: MESSAGES_SYSTEM,
            tools: MESSAGES_TOOLS,
            metadata: { user_id: user },
            messages: history,
            ...(stream ? { stream: true } : {}),
          },
          { ...(credentials ?? { 'x-api-key': 'sk-ant-test' }), 'anthropic-version': '2023-06-01' },
        )
        if (reply.status !== 200)
          return { status: reply.status, text: '', calls: [], raw: reply.text }
        const message = stream ? assembleMessage(anthropicSse(reply.text)) : reply.json
        const content: any[] = message.content
        history.push({ role: 'assistant', content })
        const text = content
          .filter((b) => b.type === 'text')
          .map((b) => b.text)
          .join('')
        const calls = content
          .filter((b) => b.type === 'tool_use')
          .map((b) => ({ id: b.id, name: b.name, args: b.input ?? {} }))
        return { status: 200, text, calls, raw: reply.text }
      },
      results(calls, outputs) {
        history.push({
          role: 'user',
          content: calls.map((call, i) => ({
            type: 'tool_result',
            tool_use_id: call.id,
            content: outputs[i],
          })),
        })
      },
    }
  },
  respond(request, say, n) {
    const content: Block[] = []
    if (say.text !== undefined) content.push({ type: 'text', text: say.text })
    for (const call of say.calls ?? [])
      content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.args })
    return request.json?.stream
      ? { sse: anthropicEvents(content, `msg_${n}`), done: false }
      : { json: anthropicMessage(content, `msg_${n}`) }
  },
  results(request) {
    return (request.json?.messages ?? [])
      .filter((m: any) => m.role === 'user' && Array.isArray(m.content))
      .flatMap((m: any) => m.content.filter((b: any) => b.type === 'tool_result'))
      .map((b: any) => firstText(b.content))
  },
  fixedParts(request) {
    return JSON.stringify({ system: request.json?.system, tools: request.json?.tools })
  },
}

export const DOORS: readonly Door[] = [chatDoor, responsesDoor, messagesDoor]
