import { openAIErrorBody } from '../../errors.js'
import {
  checkChatRequest,
  type Parsed,
  withTextAfter,
  contentText,
  isRecord,
  hasMarker,
  type ChatMessage,
  type ToolCall,
  type ToolDefinition,
} from '../../wire/chat.js'
import type { Door, Json, Part, RecallReply, RoundEnd, View } from '../../pipeline/door.js'
import { Reasoning, reasoningFields } from './reasoning.js'
import { ChatStream } from './stream.js'

/** `POST /v1/chat/completions`: the view is the request's own messages. */
export const chatDoor: Door = {
  name: 'chat',
  path: '/chat/completions',
  arrayKey: 'messages',
  // Clients of Anthropic models through OpenRouter or another OpenAI-compatible API (opencode,
  // Kilo; Qwen Code on DashScope) mark their last messages with `cache_control` and move the
  // markers the next turn: where the newest items carry one, they are held back.
  holdback: (items) => (items.slice(-MARKED).some(markedMessage) ? MARKED : 0),
  errorBody: openAIErrorBody,

  label: 'chat completions request',
  check: (body) => checkChatRequest(body) as Parsed<Json>,
  shaped: (request) => tools(request).length > 0,
  stream: (request) => request.stream === true,
  definitions: tools,
  definesTool: (request, name) => tools(request).some((tool) => tool.function?.name === name),
  identityFields: (request) => request,
  systemText(_request, view) {
    const system = view.messages.find((message) => message.role === 'system')
    return system ? contentText(system.content) : ''
  },

  toView: (items) => ({ messages: items as ChatMessage[], origins: items.map((_, i) => i) }),
  writeBack: (items, view, rendered) =>
    items.map((item, i) => (rendered[i] === view.messages[i] ? item : rendered[i]!)),
  withRecall: (request, _block, recall) =>
    recall ? { ...request, tools: [...tools(request), recall] } : request,
  withBlockItems(items, block) {
    const first = items[0] as ChatMessage | undefined
    if (first?.role !== 'system') return [{ role: 'system', content: block }, ...items]
    return [{ ...first, content: withTextAfter(first.content, block) }, ...items.slice(1)]
  },
  answerDigest(item) {
    const message = item as ChatMessage
    if (message.role !== 'assistant') return undefined
    const ids = (message.tool_calls ?? []).map((call) => call.id)
    return {
      text: contentText(message.content).trim() + '\u0000' + ids.join('\u0000'),
      named: ids.length > 0,
    }
  },
  itemDigest(item) {
    const message = item as ChatMessage
    // A tool result by its call alone: an agent that prunes old results keeps its place.
    if (message.role === 'tool') return 'tool\u0000' + (message.tool_call_id ?? '')
    return message.role + '\u0000' + contentText(message.content)
  },

  readAnswer(json) {
    const choice: unknown = isRecord(json) && Array.isArray(json.choices) ? json.choices[0] : null
    const message = isRecord(choice) && isRecord(choice.message) ? choice.message : undefined
    if (!isRecord(json) || !message) return undefined
    const text = contentText(message.content as never)
    const calls = (Array.isArray(message.tool_calls) ? message.tool_calls : []) as ToolCall[]
    const reasoning = new Reasoning()
    reasoning.take(message)
    const parts: Part[] = [
      ...reasoning.part(),
      ...(text === '' ? [] : [{ raw: { text } }]),
      ...calls.map((call) => ({ raw: call as Json, call })),
    ]
    const end: RoundEnd = {
      parts,
      usage: json.usage,
      timings: json.timings,
      held: [],
      complete: true,
    }
    return end
  },
  assistantItems: (parts) => [assistantMessage(parts)],
  replyItems: (replies: readonly RecallReply[]) =>
    replies.map((reply) => ({ role: 'tool', tool_call_id: reply.callId, content: reply.content })),
  clientAnswer(last, visible, recalled, usage) {
    const choice = (last.choices as Json[])[0]!
    const message = assistantMessage(visible)
    const calls = message.tool_calls as ToolCall[] | undefined
    const shown: Json = { ...(choice.message as Json), ...message }
    if (!calls) delete shown.tool_calls
    const finish = calls ? 'tool_calls' : recalled ? 'stop' : choice.finish_reason
    const choices = [
      { ...choice, message: shown, finish_reason: finish },
      ...(last.choices as Json[]).slice(1),
    ]
    return { ...last, choices, ...(usage === undefined ? {} : { usage }) }
  },
  textPart: (text) => ({ raw: { text } }),
  openStream: (request, isRecall) => new ChatStream(request, isRecall),
}

function tools(request: Json): ToolDefinition[] {
  return Array.isArray(request.tools) ? (request.tools as ToolDefinition[]) : []
}

/** Parts as one assistant message: its text joined, its reasoning, its calls in order. */
export function assistantMessage(parts: readonly Part[]): Json {
  const text = parts.flatMap((part) => (part.call ? [] : [String(part.raw.text ?? '')])).join('')
  const calls = parts.flatMap((part) => (part.call ? [part.call] : []))
  const message: Json = {
    role: 'assistant',
    content: text === '' ? null : text,
    ...reasoningFields(parts),
  }
  if (calls.length > 0) message.tool_calls = calls
  return message
}

export type { View }

/** The newest messages a client marks for the prompt cache (the last two, at most). */
const MARKED = 2

/**
 * Whether a message carries a `cache_control` marker: on itself (opencode through the
 * OpenAI-compatible provider), on a content part (OpenRouter's provider, Qwen Code) or on a call.
 */
function markedMessage(item: Json): boolean {
  const parts = (value: unknown) => Array.isArray(value) && value.some(hasMarker)
  return hasMarker(item) || parts(item.content) || parts(item.tool_calls)
}
