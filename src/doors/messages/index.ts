import { ERROR_KINDS, type ErrorKind } from '../../errors.js'
import {
  contentText,
  isRecord,
  withTextAfter,
  type ContentPart,
  type ToolDefinition,
} from '../../wire/chat.js'
import type { Door, Json, Part, RecallReply, RoundEnd } from '../../pipeline/door.js'
import { MessagesStream } from './stream.js'
import {
  assistantChat,
  chatTools,
  checkMessagesRequest,
  systemText,
  toolCallOf,
  toView,
  writeBack,
} from './view.js'

/** Anthropic's error types where they name the cause; the rest by the OpenAI type's class. */
const ANTHROPIC_TYPES: Partial<Record<ErrorKind, string>> = {
  unauthorized: 'authentication_error',
  forbidden: 'permission_error',
  not_found: 'not_found_error',
  body_too_large: 'request_too_large',
  // Claude Code waits and tries again on an overloaded API, as it should on a stopping proxy.
  stopping: 'overloaded_error',
}

/** Anthropic's error body for an error kind, or with the upstream's own `type` when it gave one. */
export function anthropicErrorBody(kind: ErrorKind, message: string, own?: string): Json {
  const type =
    own ??
    ANTHROPIC_TYPES[kind] ??
    (ERROR_KINDS[kind].type === 'invalid_request_error' ? 'invalid_request_error' : 'api_error')
  return { type: 'error', error: { type, message } }
}

/** Anthropic's error types, by the HTTP status each comes with (its API's errors page). */
const ANTHROPIC_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
  529: 'overloaded_error',
}

/**
 * An upstream error's type as Anthropic's: its own when it is one of them, else the one its
 * status stands for. An Anthropic-compatible server (llama.cpp, vLLM, DeepSeek) names its errors
 * its own way (`exceed_context_size_error`, `BadRequestError`), and inside a stream the type is
 * all a client such as Claude Code goes by: it waits on `overloaded_error` and `rate_limit_error`.
 */
export function anthropicErrorType(type?: string, status?: number): string | undefined {
  if (type !== undefined && ANTHROPIC_ERROR_TYPES.has(type)) return type
  if (status === undefined) return undefined
  return ANTHROPIC_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error')
}

const ANTHROPIC_ERROR_TYPES: ReadonlySet<string> = new Set([
  ...Object.values(ANTHROPIC_BY_STATUS),
  'timeout_error',
])

/** `POST /v1/messages`: the Anthropic Messages API (Claude Code). */
export const messagesDoor: Door = {
  name: 'messages',
  path: '/messages',
  arrayKey: 'messages',
  // Claude Code puts its cache breakpoint on the last message and moves it the next turn.
  holdback: () => 2,
  errorBody: anthropicErrorBody,

  label: 'Messages API request',
  check: checkMessagesRequest,
  shaped: (request) => tools(request).length > 0,
  stream: (request) => request.stream === true,
  definitions: (request) => chatTools(tools(request)),
  definesTool: (request, name) => tools(request).some((tool) => tool.name === name),
  /** Claude Code names its session in `metadata.user_id` (`…_session_<uuid>`): read as `user`. */
  identityFields(request) {
    if (typeof request.user === 'string') return request
    const userId = isRecord(request.metadata) ? request.metadata.user_id : undefined
    return typeof userId === 'string' ? { ...request, user: userId } : request
  },
  systemText: (request) => systemText(request.system),

  toView,
  writeBack,
  withRecall(request, block, recall) {
    const added = recall ? [...tools(request), anthropicTool(recall)] : tools(request)
    return { ...request, system: withTextAfter(request.system, block), tools: added }
  },
  withBlockItems: (items) => [...items],
  answerDigest(item) {
    if (item.role !== 'assistant') return undefined
    const chat = assistantChat(item.content)
    const ids = (chat.tool_calls ?? []).map((call) => call.id)
    return {
      text: contentText(chat.content).trim() + '\u0000' + ids.join('\u0000'),
      named: ids.length > 0,
    }
  },
  itemDigest(item) {
    const content = item.content
    if (!Array.isArray(content)) return String(item.role) + '\u0000' + String(content)
    // Tool results by their call alone; cache breakpoints move and are not part of it.
    const blocks = (content as Json[]).map((block) =>
      block.type === 'tool_result'
        ? 'r:' + String(block.tool_use_id ?? '')
        : contentText([block as ContentPart]),
    )
    return String(item.role) + '\u0000' + blocks.join('\u0000')
  },
  /** A recall's results and the results of the agent's calls beside it: one user turn. */
  join(restored, next) {
    if (restored.role !== 'user' || next.role !== 'user') return undefined
    if (!Array.isArray(restored.content) || !Array.isArray(next.content)) return undefined
    return { ...next, content: [...restored.content, ...next.content] }
  },

  readAnswer(json) {
    if (!isRecord(json) || !Array.isArray(json.content)) return undefined
    const parts = json.content.filter(isRecord).map(partOf)
    const end: RoundEnd = { parts, usage: json.usage, held: [], complete: true }
    return end
  },
  assistantItems: (parts) => [{ role: 'assistant', content: parts.map((part) => part.raw) }],
  replyItems: (replies: readonly RecallReply[]) => [
    {
      role: 'user',
      content: replies.map((reply) => ({
        type: 'tool_result',
        tool_use_id: reply.callId,
        content: reply.content,
      })),
    },
  ],
  clientAnswer(last, visible, recalled, usage) {
    const toolUse = visible.some((part) => part.call)
    const stop = toolUse ? 'tool_use' : recalled ? 'end_turn' : last.stop_reason
    return {
      ...last,
      content: visible.map((part) => part.raw),
      stop_reason: stop,
      ...(usage === undefined ? {} : { usage }),
    }
  },
  textPart: (text) => ({ raw: { type: 'text', text } }),
  openStream: (_request, isRecall) => new MessagesStream(isRecall),
}

function tools(request: Json): Json[] {
  return Array.isArray(request.tools) ? (request.tools as Json[]) : []
}

/** A content block, and its tool call when it is a tool_use. */
export function partOf(block: Json): Part {
  return block.type === 'tool_use' ? { raw: block, call: toolCallOf(block) } : { raw: block }
}

/** The recall tool in Anthropic's shape. */
function anthropicTool(tool: ToolDefinition): Json {
  return {
    name: tool.function?.name,
    description: tool.function?.description,
    input_schema: tool.function?.parameters,
  }
}
