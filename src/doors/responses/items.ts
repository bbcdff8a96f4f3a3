import { shortHash } from '../../session/identity.js'
import {
  appendedText,
  isRecord,
  type ChatMessage,
  type ContentPart,
  type ToolDefinition,
} from '../../wire/chat.js'
import type { Json, View } from '../../pipeline/door.js'

/**
 * A Responses request's items as the rebuild's view: calls become assistant messages with one
 * tool call (a custom tool's raw input is the `input` argument of a pseudo-call), outputs become
 * tool messages; items the rebuild has no use for (reasoning) are left out.
 */
export function toView(items: readonly Json[]): View {
  const messages: ChatMessage[] = []
  const origins: number[] = []
  items.forEach((item, index) => {
    const message = itemMessage(item)
    if (!message) return
    messages.push(message)
    origins.push(index)
  })
  return { messages, origins }
}

function itemMessage(item: Json): ChatMessage | undefined {
  const callId = typeof item.call_id === 'string' ? item.call_id : undefined
  switch (item.type) {
    case 'function_call':
      if (callId === undefined || typeof item.name !== 'string') return undefined
      return assistantCall(
        callId,
        item.name,
        typeof item.arguments === 'string' ? item.arguments : '',
      )
    case 'custom_tool_call':
      if (callId === undefined || typeof item.name !== 'string') return undefined
      return assistantCall(
        callId,
        item.name,
        JSON.stringify({ input: typeof item.input === 'string' ? item.input : '' }),
        'custom',
      )
    case 'function_call_output':
    case 'custom_tool_call_output':
      if (callId === undefined) return undefined
      if (typeof item.output === 'string')
        return { role: 'tool', tool_call_id: callId, content: item.output }
      // An output of parts (Codex's for a result with content items): its input_text parts are
      // the chat's text parts, the first of them carries the rendering.
      if (Array.isArray(item.output) && item.output.every(isPart))
        return {
          role: 'tool',
          tool_call_id: callId,
          content: renamed(item.output, 'input_text', 'text'),
        }
      return undefined
    case 'compaction':
    case 'compaction_summary':
      // A server-side summary, known by its own bytes (it has no text to read).
      return { role: 'compaction', content: JSON.stringify(item) }
    default:
      if (isMessage(item)) return { role: String(item.role), content: messageText(item.content) }
      return undefined
  }
}

/** A call as the view's: a freeform tool's (`custom`) with its input as the arguments' `input`. */
function assistantCall(
  id: string,
  name: string,
  args: string,
  type: 'function' | 'custom' = 'function',
): ChatMessage {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type, function: { name, arguments: args } }],
  }
}

/** The text of a message item's content: a string, or its text parts joined. */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : ''))
    .join('\n')
}

/**
 * The items with the rebuild written back: tool outputs rendered, summaries with their table (an
 * opaque compaction item has it in a message of its own after it).
 */
export function writeBack(
  items: readonly Json[],
  view: View,
  rendered: readonly ChatMessage[],
): (Json | Json[])[] {
  const out: (Json | Json[])[] = [...items]
  view.origins.forEach((at, i) => {
    const message = view.messages[i]!
    const shown = rendered[i]!
    if (shown === message) return
    const item = items[at]!
    if (message.role === 'tool') {
      const content = shown.content
      out[at] = {
        ...item,
        output: Array.isArray(content) ? renamed(content, 'text', 'input_text') : content,
      }
      return
    }
    const call = shown.tool_calls?.[0]
    if (message.role === 'assistant' && call) {
      // A call whose long strings were elided (`--elide-inputs`): its arguments as rewritten.
      const args = call.function.arguments
      out[at] =
        item.type === 'custom_tool_call'
          ? { ...item, input: (JSON.parse(args) as { input: unknown }).input }
          : { ...item, arguments: args }
      return
    }
    // A summary (Codex's compaction) gets the table of files read before it.
    const table = appendedText(
      String(message.content ?? ''),
      typeof shown.content === 'string' ? shown.content : '',
    )
    if (table === undefined) return
    out[at] =
      message.role === 'compaction'
        ? [item, { type: 'message', role: 'user', content: [{ type: 'input_text', text: table }] }]
        : withTable(item, table)
  })
  return out
}

/** Parts with the text parts' type `from` as `to`: the Responses API's names and the chat's. */
function renamed(parts: readonly ContentPart[], from: string, to: string): ContentPart[] {
  return parts.map((part) => (part.type === from ? { ...part, type: to } : part))
}

function isPart(value: unknown): value is ContentPart {
  return isRecord(value) && typeof value.type === 'string'
}

/** A message item with the table after its text: one more input_text part, or a longer string. */
function withTable(item: Json, table: string): Json {
  const content = item.content
  if (typeof content === 'string') return { ...item, content: content + '\n\n' + table }
  if (Array.isArray(content))
    return { ...item, content: [...content, { type: 'input_text', text: table }] }
  return item
}

/** The Responses tools in the chat shape, for classifying calls by their definitions. */
export function chatTools(tools: readonly unknown[]): ToolDefinition[] {
  return tools.flatMap((tool) =>
    isRecord(tool) && typeof tool.name === 'string'
      ? [
          {
            type: 'function',
            function: {
              name: tool.name,
              ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
              parameters: tool.parameters,
            },
          },
        ]
      : [],
  )
}

/**
 * The recall tool in the Responses shape; not strict (as Codex declares its own tools): its
 * offset and limit are optional, which a strict schema does not allow.
 */
export function responsesTool(tool: ToolDefinition): Json {
  return {
    type: 'function',
    name: tool.function?.name,
    description: tool.function?.description,
    strict: false,
    parameters: tool.function?.parameters,
  }
}

/**
 * How an item the client got is known again when it comes back: calls by their call id, a
 * message by its role and text, reasoning by its encrypted content, anything else by its id or
 * its whole JSON. (The AI SDK sends output back without ids when it does not store it.)
 */
export function itemKey(item: Json): string {
  if (typeof item.call_id === 'string') return `call\u0000${String(item.type)}\u0000${item.call_id}`
  if (isMessage(item))
    return `message\u0000${String(item.role)}\u0000${messageText(item.content).trim()}`
  if (item.type === 'reasoning' && typeof item.encrypted_content === 'string')
    return `reasoning\u0000${shortHash(item.encrypted_content)}`
  return idKey(item) ?? `json\u0000${shortHash(JSON.stringify(item))}`
}

/** A message item: typed so, or an untyped item with a role (the API's shorthand). */
export function isMessage(item: Json): boolean {
  return item.type === 'message' || (item.type === undefined && typeof item.role === 'string')
}

/**
 * An item's key by its id: what a client that stores its output (the AI SDK with `store: true`)
 * sends back in its place, an `item_reference` to that id.
 */
export function idKey(item: Json): string | undefined {
  return typeof item.id === 'string' ? `id\u0000${item.id}` : undefined
}
