import { assistantKey } from '../../session/fingerprints.js'
import { shortHash } from '../../session/identity.js'
import {
  contentText,
  isRecord,
  withText,
  type ChatMessage,
  type ContentPart,
  type MessageContent,
  type ToolCall,
  type ToolDefinition,
} from '../../wire/chat.js'

/** A JSON object as the client sent it: every field not read here goes on untouched. */
export type Json = Record<string, unknown>

/** The parts of an Anthropic Messages request the proxy reads. */
export interface MessagesRequest {
  messages: Json[]
  system?: unknown
  tools?: Json[]
  stream?: boolean
  [field: string]: unknown
}

/** Where a chat message came from in the Anthropic request. */
export type Origin =
  | { readonly kind: 'system' }
  | { readonly kind: 'message'; readonly at: number }
  | { readonly kind: 'tool'; readonly at: number; readonly block: number }
  | { readonly kind: 'rest'; readonly at: number }

export interface ChatView {
  readonly messages: ChatMessage[]
  readonly origins: Origin[]
}

/** Checks the shape the proxy relies on; a wrong shape is a 400, never a crash. */
export function checkMessagesRequest(
  body: unknown,
): { ok: true; value: MessagesRequest } | { ok: false; message: string } {
  if (!isRecord(body)) return { ok: false, message: 'the body must be a JSON object' }
  if (!Array.isArray(body.messages)) return { ok: false, message: "'messages' must be an array" }
  for (const [index, message] of body.messages.entries()) {
    if (!isRecord(message) || typeof message.role !== 'string')
      return { ok: false, message: `messages[${index}] must be an object with a role` }
    const content = message.content
    if (typeof content !== 'string' && !Array.isArray(content))
      return { ok: false, message: `messages[${index}].content must be a string or an array` }
    if (Array.isArray(content) && !content.every((b) => isRecord(b) && typeof b.type === 'string'))
      return { ok: false, message: `messages[${index}]: every content block needs a type` }
  }
  if (body.tools !== undefined && (!Array.isArray(body.tools) || !body.tools.every(isRecord)))
    return { ok: false, message: "'tools' must be an array of objects" }
  return { ok: true, value: body as MessagesRequest }
}

/** The system prompt's text: a string, or its text blocks joined by "\n". */
export function systemText(system: unknown): string {
  if (typeof system === 'string') return system
  return Array.isArray(system) ? contentText(system.filter(isRecord) as ContentPart[]) : ''
}

/** Anthropic tools as chat tool definitions, for the profile's classification. */
export function chatTools(tools: readonly Json[]): ToolDefinition[] {
  return tools.map((tool) => ({
    type: 'function',
    function: {
      name: typeof tool.name === 'string' ? tool.name : '',
      description: typeof tool.description === 'string' ? tool.description : undefined,
      parameters: tool.input_schema,
    },
  }))
}

/** An assistant message as chat sees it: its text, and its tool_use blocks as tool calls. */
export function assistantChat(content: unknown): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content }
  const blocks = Array.isArray(content) ? content.filter(isRecord) : []
  const text = blocks
    .filter((b) => b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('')
  const calls: ToolCall[] = blocks
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({
      id: String(b.id ?? ''),
      type: 'function',
      function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) },
    }))
  const message: ChatMessage = { role: 'assistant', content: text === '' ? null : text }
  if (calls.length > 0) message.tool_calls = calls
  return message
}

/** A tool_result block's content as chat content: cache breakpoints are not part of it. */
function resultContent(content: unknown): MessageContent {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.filter(isRecord).map((part) => {
    const { cache_control: _, ...rest } = part
    return rest as ContentPart
  })
}

/**
 * The request as the chat messages the rebuild understands: the system prompt first, then per
 * message its chat form; a user message's tool_result blocks become one tool message each.
 */
export function toChat(body: MessagesRequest): ChatView {
  const messages: ChatMessage[] = [{ role: 'system', content: systemText(body.system) }]
  const origins: Origin[] = [{ kind: 'system' }]
  body.messages.forEach((message, at) => {
    const content = message.content
    if (message.role === 'assistant') {
      messages.push(assistantChat(content))
      origins.push({ kind: 'message', at })
      return
    }
    if (!Array.isArray(content) || !content.some((b) => isRecord(b) && b.type === 'tool_result')) {
      messages.push({ role: String(message.role), content: content as MessageContent })
      origins.push({ kind: 'message', at })
      return
    }
    const rest: ContentPart[] = []
    content.forEach((block: Json, index) => {
      if (block.type !== 'tool_result') {
        rest.push(block as ContentPart)
        return
      }
      messages.push({
        role: 'tool',
        tool_call_id: String(block.tool_use_id ?? ''),
        content: resultContent(block.content),
      })
      origins.push({ kind: 'tool', at, block: index })
    })
    if (rest.length > 0) {
      messages.push({ role: 'user', content: rest })
      origins.push({ kind: 'rest', at })
    }
  })
  return { messages, origins }
}

/**
 * The client's messages with the rebuild written back: each tool_result's content becomes its
 * rendering (a string stays a string; parts keep their first text part carrying it), a summary
 * gets its table; every other byte is as it came.
 */
export function writeBack(body: MessagesRequest, view: ChatView, rebuilt: ChatMessage[]): Json[] {
  if (rebuilt.length !== view.messages.length)
    throw new Error('the rebuild changed the number of messages')
  const out = body.messages.map((message) => message)
  const copies = new Map<number, Json>()
  const copyOf = (at: number): Json => {
    let copy = copies.get(at)
    if (!copy) {
      const original = body.messages[at]!
      copy = { ...original }
      if (Array.isArray(original.content)) copy.content = [...original.content]
      copies.set(at, copy)
      out[at] = copy
    }
    return copy
  }
  view.origins.forEach((origin, i) => {
    const rendered = rebuilt[i]!
    if (origin.kind === 'tool') {
      const text = contentText(rendered.content)
      const copy = copyOf(origin.at)
      const blocks = copy.content as Json[]
      const block = blocks[origin.block]!
      const content = block.content
      const next = Array.isArray(content)
        ? withText(content as ContentPart[], text)
        : content === undefined && text === ''
          ? undefined
          : text
      blocks[origin.block] = next === undefined ? block : { ...block, content: next }
    } else if (origin.kind === 'message' && rendered !== view.messages[i]) {
      // A summary that carries the table of files read before it.
      if (rendered.role !== 'assistant') copyOf(origin.at).content = rendered.content
    }
  })
  return out
}

/** The system prompt with the block at its end: the same bytes every time. */
export function withPromptBlock(system: unknown, block: string): unknown {
  if (Array.isArray(system)) return [...system, { type: 'text', text: block }]
  return typeof system === 'string' && system !== '' ? system + '\n\n' + block : block
}

/** The recall tool in Anthropic's shape. */
export function anthropicTool(tool: ToolDefinition): Json {
  return {
    name: tool.function?.name,
    description: tool.function?.description,
    input_schema: tool.function?.parameters,
  }
}

/** A message by its role, call id and text: what a text reply's key is tied to. */
export function previousKey(message: ChatMessage | undefined): string | undefined {
  if (!message) return undefined
  const text = contentText(message.content)
  return shortHash(message.role + '\u0000' + (message.tool_call_id ?? '') + '\u0000' + text)
}

/** The key of a visible assistant message: its tool_use ids, or its text after `previous`. */
export function visibleKey(message: ChatMessage, previous: ChatMessage | undefined): string {
  return assistantKey(message, previousKey(previous))
}
