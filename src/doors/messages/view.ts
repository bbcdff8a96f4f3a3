import {
  appendedText,
  contentText,
  isRecord,
  withText,
  withTextAfter,
  type ChatMessage,
  type ContentPart,
  type MessageContent,
  type ToolCall,
  type ToolDefinition,
} from '../../wire/chat.js'
import type { Json, View } from '../../pipeline/door.js'

const MESSAGE_ROLES: ReadonlySet<string> = new Set(['user', 'assistant', 'system'])

/** Checks the shape the proxy relies on; a wrong shape is a 400, never a crash. */
export function checkMessagesRequest(
  body: unknown,
): { ok: true; value: Json } | { ok: false; message: string } {
  if (!isRecord(body)) return { ok: false, message: 'the body must be a JSON object' }
  if (!Array.isArray(body.messages)) return { ok: false, message: "'messages' must be an array" }
  for (const [index, message] of body.messages.entries()) {
    if (!isRecord(message) || typeof message.role !== 'string')
      return { ok: false, message: `messages[${index}] must be an object with a role` }
    // The Messages API's roles (a `system` one some compatible servers take): a chat `tool`
    // message here is a client speaking the wrong API.
    if (!MESSAGE_ROLES.has(message.role))
      return {
        ok: false,
        message: `messages[${index}]: unexpected role "${message.role}"; the Messages API takes "user" and "assistant" (tool results are tool_result blocks in a user message)`,
      }
    const content = message.content
    if (typeof content !== 'string' && !Array.isArray(content))
      return { ok: false, message: `messages[${index}].content must be a string or an array` }
    if (Array.isArray(content) && !content.every((b) => isRecord(b) && typeof b.type === 'string'))
      return { ok: false, message: `messages[${index}]: every content block needs a type` }
    const broken = Array.isArray(content) ? content.findIndex(badToolResult) : -1
    if (broken >= 0)
      return {
        ok: false,
        message: `messages[${index}].content[${broken}]: a tool_result's content must be a string or an array of blocks with a type`,
      }
  }
  if (body.tools !== undefined && (!Array.isArray(body.tools) || !body.tools.every(isRecord)))
    return { ok: false, message: "'tools' must be an array of objects" }
  return { ok: true, value: body }
}

/** A tool_result whose content is neither absent, a string, nor blocks with a type. */
function badToolResult(block: Json): boolean {
  if (block.type !== 'tool_result') return false
  const content = block.content
  if (content === undefined || typeof content === 'string') return false
  return !Array.isArray(content) || !content.every((b) => isRecord(b) && typeof b.type === 'string')
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

/** A tool_use block as a chat tool call. */
export function toolCallOf(block: Json): ToolCall {
  return {
    id: String(block.id ?? ''),
    type: 'function',
    function: { name: String(block.name ?? ''), arguments: JSON.stringify(block.input ?? {}) },
  }
}

/** An assistant message as chat sees it: its text, and its tool_use blocks as tool calls. */
export function assistantChat(content: unknown): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content }
  const blocks = Array.isArray(content) ? content.filter(isRecord) : []
  const text = blocks
    .filter((b) => b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('')
  const calls = blocks.filter((b) => b.type === 'tool_use').map(toolCallOf)
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
 * The messages as the rebuild's view: per message its chat form; a user message's tool_result
 * blocks become one tool message each, and its other blocks one user message after them.
 */
export function toView(items: readonly Json[]): View {
  const messages: ChatMessage[] = []
  const origins: number[] = []
  items.forEach((message, at) => {
    const content = message.content
    if (message.role === 'assistant') {
      messages.push(assistantChat(content))
      origins.push(at)
      return
    }
    if (!Array.isArray(content) || !content.some((b) => isRecord(b) && b.type === 'tool_result')) {
      messages.push({ role: String(message.role), content: content as MessageContent })
      origins.push(at)
      return
    }
    const rest: ContentPart[] = []
    for (const block of content as Json[]) {
      if (block.type !== 'tool_result') {
        rest.push(block as ContentPart)
        continue
      }
      messages.push({
        role: 'tool',
        tool_call_id: String(block.tool_use_id ?? ''),
        content: resultContent(block.content),
      })
      origins.push(at)
    }
    if (rest.length > 0) {
      messages.push({ role: 'user', content: rest })
      origins.push(at)
    }
  })
  return { messages, origins }
}

/**
 * The items with the rebuild written back: each tool_result's content becomes its rendering (a
 * string stays a string; parts keep their first text part carrying it), a summary gets its
 * table; every other byte is as it came.
 */
export function writeBack(
  items: readonly Json[],
  view: View,
  rendered: readonly ChatMessage[],
): Json[] {
  const out = [...items]
  const copies = new Map<number, Json>()
  const copyOf = (at: number): Json => {
    let copy = copies.get(at)
    if (!copy) {
      const original = items[at]!
      copy = { ...original }
      if (Array.isArray(original.content)) copy.content = [...original.content]
      copies.set(at, copy)
      out[at] = copy
    }
    return copy
  }
  // The n-th tool message of an item is its n-th tool_result block.
  let block = -1
  view.origins.forEach((at, i) => {
    if (i === 0 || view.origins[i - 1] !== at) block = -1
    const message = view.messages[i]!
    const shown = rendered[i]!
    if (message.role === 'tool') {
      const blocks = items[at]!.content as Json[]
      block = blocks.findIndex((b, k) => k > block && b.type === 'tool_result')
      if (shown === message) return
      const copied = copyOf(at).content as Json[]
      const original = copied[block]!
      const text = contentText(shown.content)
      const content = original.content
      const next = Array.isArray(content)
        ? withText(content as ContentPart[], text)
        : content === undefined && text === ''
          ? undefined
          : text
      copied[block] = next === undefined ? original : { ...original, content: next }
    } else if (shown !== message && message.role === 'assistant') {
      const copy = copyOf(at)
      // Calls whose long strings were elided (`--elide-inputs`): their inputs as rewritten. The
      // n-th call of the view is the n-th tool_use block (ids may repeat).
      const args = (shown.tool_calls ?? []).map((c) => c.function.arguments)
      const blocks = copy.content
      let call = -1
      if (Array.isArray(blocks))
        blocks.forEach((b: Json, k) => {
          if (b.type !== 'tool_use') return
          const rewritten = args[++call]
          if (rewritten !== undefined && rewritten !== JSON.stringify(b.input ?? {}))
            blocks[k] = { ...b, input: JSON.parse(rewritten) as unknown }
        })
      // A summary the agent sends as its own message (opencode's, after its question) gets the
      // table of files read before it: a text block after its blocks, or after its text.
      const table = appendedText(contentText(message.content), contentText(shown.content))
      if (table !== undefined)
        copy.content = Array.isArray(blocks)
          ? [...(blocks as Json[]), { type: 'text', text: table }]
          : withTextAfter(blocks, table)
    } else if (shown !== message) {
      // A summary that carries the table of files read before it. Where it shares its item
      // with tool results (the view split them apart), its new parts go after the item's blocks.
      const copy = copyOf(at)
      const shared = view.messages[i - 1]?.role === 'tool' && view.origins[i - 1] === at
      copy.content =
        shared && Array.isArray(message.content) && Array.isArray(shown.content)
          ? [...(copy.content as Json[]), ...shown.content.slice(message.content.length)]
          : shown.content
    }
  })
  return out
}
