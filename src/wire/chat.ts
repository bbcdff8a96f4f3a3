/**
 * The parts of an OpenAI chat-completions request that the proxy reads. Everything else is
 * carried through untouched, in the client's key order.
 */
export interface ChatRequest {
  messages: ChatMessage[]
  tools?: ToolDefinition[]
  stream?: boolean
  stream_options?: { include_usage?: boolean }
  [field: string]: unknown
}

export interface ChatMessage {
  role: string
  content?: MessageContent
  tool_calls?: ToolCall[]
  tool_call_id?: string
  [field: string]: unknown
}

export type MessageContent = string | ContentPart[] | null

export interface ContentPart {
  type: string
  text?: string
  [field: string]: unknown
}

export interface ToolCall {
  id: string
  type?: string
  function: { name: string; arguments: string }
  [field: string]: unknown
}

export interface ToolDefinition {
  type: string
  function?: { name: string; description?: string; parameters?: unknown }
  [field: string]: unknown
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string }

/** Checks the shape the proxy relies on; a wrong shape is a 400, never a crash. */
export function checkChatRequest(body: unknown): Parsed<ChatRequest> {
  if (!isRecord(body)) return fail('the body must be a JSON object')
  if (!Array.isArray(body.messages)) return fail("'messages' must be an array")
  for (const [index, message] of body.messages.entries()) {
    const problem = messageProblem(message)
    if (problem) return fail(`messages[${index}]: ${problem}`)
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return fail("'tools' must be an array")
    for (const [index, tool] of body.tools.entries()) {
      if (!isRecord(tool) || typeof tool.type !== 'string')
        return fail(`tools[${index}] must be an object with a type`)
    }
  }
  return { ok: true, value: body as ChatRequest }
}

function messageProblem(message: unknown): string | undefined {
  if (!isRecord(message)) return 'must be an object'
  if (typeof message.role !== 'string') return "'role' must be a string"
  const content = message.content
  if (content !== undefined && content !== null && typeof content !== 'string') {
    if (!Array.isArray(content)) return "'content' must be a string, an array of parts or null"
    if (!content.every((part) => isRecord(part) && typeof part.type === 'string')) {
      return 'every content part must be an object with a type'
    }
  }
  if (message.role === 'tool' && typeof message.tool_call_id !== 'string') {
    return "a tool message needs a string 'tool_call_id'"
  }
  if (message.tool_calls !== undefined) {
    if (!Array.isArray(message.tool_calls)) return "'tool_calls' must be an array"
    for (const call of message.tool_calls) {
      if (!isRecord(call) || typeof call.id !== 'string' || !isRecord(call.function)) {
        return "every tool call needs an 'id' and a 'function'"
      }
      if (typeof call.function.name !== 'string') return 'every tool call function needs a name'
      if (typeof call.function.arguments !== 'string') return 'tool call arguments must be a string'
    }
  }
  return undefined
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function fail(message: string): Parsed<never> {
  return { ok: false, message }
}

/** The text of a message's content: a string, or its text parts joined by "\n". */
export function contentText(content: MessageContent | undefined): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .filter((part) => part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('\n')
}

/**
 * Content with `text` after it: parts get one more text part, a string grows by a blank line
 * and the text, empty content becomes the text. (The prompt block, a summary's table.)
 */
export function withTextAfter(content: unknown, text: string): string | ContentPart[] {
  if (Array.isArray(content)) return [...(content as ContentPart[]), { type: 'text', text }]
  return typeof content === 'string' && content !== '' ? content + '\n\n' + text : text
}

/** What withTextAfter added to a text (`before` as it was, `after` as it is), if anything. */
export function appendedText(before: string, after: string): string | undefined {
  if (after === before) return undefined
  if (before === '') return after
  return after.startsWith(before + '\n\n') ? after.slice(before.length + 2) : undefined
}

/**
 * Whether a message, a content part or a call carries Anthropic's `cache_control` marker: clients
 * move it to their newest messages every turn, so it is never content.
 */
export function hasMarker(value: unknown): boolean {
  return isRecord(value) && value.cache_control !== undefined
}

/** A JSON replacer that leaves `cache_control` out (what has none encodes as without it). */
export function withoutMarkers(key: string, value: unknown): unknown {
  return key === 'cache_control' ? undefined : value
}

/**
 * A stored rendering with the `cache_control` markers of the content the client sends now.
 * Clients move a marker off a result the turn after (Qwen Code on DashScope, on the text part),
 * and the rendering stored while it was newest kept it: markers piled up upstream, one a turn,
 * past the four Anthropic takes. Content without a marker either way is the stored bytes.
 */
export function withMarkersOf(
  stored: MessageContent,
  now: MessageContent | undefined,
): MessageContent {
  if (!Array.isArray(stored) || !Array.isArray(now)) return stored
  if (!stored.some(hasMarker) && !now.some(hasMarker)) return stored
  // A stored rendering is withText of the same content, markers aside: one text part.
  return withText(now, contentText(stored))
}

/**
 * Content with its text replaced: a string stays a string; parts keep their first text part's
 * fields (with the new text) and every non-text part, in order.
 */
export function withText(content: MessageContent | undefined, text: string): MessageContent {
  if (!Array.isArray(content)) return text
  const out: ContentPart[] = []
  let placed = false
  for (const part of content) {
    if (part.type !== 'text') out.push(part)
    else if (!placed) {
      out.push({ ...part, text })
      placed = true
    }
  }
  if (!placed) out.unshift({ type: 'text', text })
  return out
}
