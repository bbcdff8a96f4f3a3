import { shortHash } from '../../session/identity.js'
import { isRecord, type ChatMessage, type ToolDefinition } from '../../wire/chat.js'

/** One item of a Responses request's `input` (or of a response's `output`), as it came. */
export type Item = Record<string, unknown>

/** The chat view of a Responses request, and where each tool message came from. */
export interface ChatView {
  /** `instructions` as the first system message, then the mapped items. */
  readonly messages: ChatMessage[]
  /** For each message, the index of the input item it stands for (the system message: -1). */
  readonly origins: readonly number[]
}

/**
 * Maps a Responses request's items to the chat messages the rebuild understands: calls become
 * assistant messages with one tool call (a custom tool's raw input is the `input` argument of a
 * pseudo-call), outputs become tool messages; items the rebuild has no use for are left out.
 */
export function toChat(instructions: string, input: readonly Item[]): ChatView {
  const messages: ChatMessage[] = [{ role: 'system', content: instructions }]
  const origins: number[] = [-1]
  input.forEach((item, index) => {
    const message = itemMessage(item)
    if (!message) return
    messages.push(message)
    origins.push(index)
  })
  return { messages, origins }
}

function itemMessage(item: Item): ChatMessage | undefined {
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
      )
    case 'function_call_output':
    case 'custom_tool_call_output':
      if (callId === undefined || typeof item.output !== 'string') return undefined
      return { role: 'tool', tool_call_id: callId, content: item.output }
    default:
      if (item.type === 'message' || (item.type === undefined && typeof item.role === 'string'))
        return {
          role: item.role === 'developer' ? 'developer' : String(item.role),
          content: messageText(item.content),
        }
      return undefined
  }
}

function assistantCall(id: string, name: string, args: string): ChatMessage {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name, arguments: args } }],
  }
}

/** The text of a message item's content: a string, or its text parts joined. */
function messageText(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : ''))
    .join('\n')
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
export function responsesTool(tool: ToolDefinition): Item {
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
 * message by its role and text, anything else by its id or its whole JSON.
 */
export function itemKey(item: Item): string {
  if (typeof item.call_id === 'string')
    return shortHash(`call\u0000${String(item.type)}\u0000${item.call_id}`)
  if (item.type === 'message')
    return shortHash(`message\u0000${String(item.role)}\u0000${messageText(item.content).trim()}`)
  if (typeof item.id === 'string') return shortHash(`id\u0000${item.id}`)
  return shortHash(`json\u0000${JSON.stringify(item)}`)
}
