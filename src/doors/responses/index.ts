import { openAIErrorBody } from '../../errors.js'
import { isRecord } from '../../wire/chat.js'
import type { Door, Json, Part, RecallReply, RoundEnd } from '../../pipeline/door.js'
import { chatTools, idKey, isMessage, itemKey, responsesTool, toView, writeBack } from './items.js'
import { dropUnfollowedReasoning } from './orphans.js'
import { ResponsesStream } from './stream.js'

/** `POST /v1/responses`: the OpenAI Responses API (Codex CLI). */
export const responsesDoor: Door = {
  name: 'responses',
  path: '/responses',
  arrayKey: 'input',
  // A reasoning item that ends a request is judged by what follows it (orphans.ts): the next
  // request parses it again, so that every process, on the fast path or not, judges it alike.
  holdback: (items) => (items.at(-1)?.type === 'reasoning' ? 1 : 0),
  summarising: (items) => items.at(-1)?.type === 'compaction_trigger',
  errorBody: openAIErrorBody,

  label: 'Responses API request',
  check(body) {
    if (!isRecord(body)) return { ok: false, message: 'the body must be a JSON object' }
    if (body.tools !== undefined && !Array.isArray(body.tools))
      return { ok: false, message: "'tools' must be an array" }
    const input = body.input
    if (typeof input !== 'string' && input !== undefined) {
      if (!Array.isArray(input) || !input.every(isRecord))
        return { ok: false, message: "'input' must be a string or an array of items" }
    }
    return { ok: true, value: body }
  },
  shaped: (request) => Array.isArray(request.input) && tools(request).length > 0,
  stream: (request) => request.stream === true,
  definitions: (request) => chatTools(tools(request)),
  definesTool: (request, name) =>
    tools(request).some((tool) => isRecord(tool) && tool.name === name),
  identityFields: (request) => request,
  systemText: (request) => instructionsOf(request),

  toView,
  writeBack,
  // The block ends the client's `instructions`; a client that sends none (Codex, which sends its
  // prompt as a developer message) gets it as a message of its own, after its first item when
  // that is its prompt, in that message's role (a local server's template may know `system`
  // only): ChatGPT's Codex backend has refused `instructions` that are not Codex's own, and Codex
  // labels each part of its prompt's message (`content_item_kinds`), so neither is touched.
  // (The fields decide: the fast path sees only the items a request appends.)
  withRecall(request, block, recall) {
    const instructions = instructionsOf(request)
    return {
      ...request,
      ...(instructions === '' ? {} : { instructions: instructions + '\n\n' + block }),
      tools: recall ? [...tools(request), responsesTool(recall)] : tools(request),
    }
  },
  withBlockItems(items, block, request) {
    const [first, ...rest] = items
    if (instructionsOf(request) !== '') return [...items]
    const own = (role: unknown) => ({
      type: 'message',
      role,
      content: [{ type: 'input_text', text: block }],
    })
    if (first === undefined || !isInstruction(first)) return [own('developer'), ...items]
    return [first, own(first.role), ...rest]
  },
  dropUnfollowed: dropUnfollowedReasoning,
  answerDigest(item) {
    if (item.type === 'message' && item.role !== 'assistant') return undefined
    if (item.type === undefined && item.role !== 'assistant') return undefined
    if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output')
      return undefined
    return { text: itemKey(item), named: typeof item.call_id === 'string' }
  },
  itemDigest: itemKey,
  alias: idKey,

  readAnswer(json) {
    if (!isRecord(json) || !Array.isArray(json.output)) return undefined
    const end: RoundEnd = {
      parts: json.output.filter(isRecord).map(partOf),
      usage: json.usage,
      held: [],
      complete: true,
    }
    return end
  },
  assistantItems: (parts) => parts.map((part) => part.raw),
  replyItems: (replies: readonly RecallReply[]) =>
    replies.map((reply) => ({
      type: 'function_call_output',
      call_id: reply.callId,
      output: reply.content,
    })),
  clientAnswer: (last, visible, _recalled, usage) => ({
    ...last,
    output: visible.map((part) => part.raw),
    ...(usage === undefined ? {} : { usage }),
  }),
  textPart: (text) => ({ raw: textItem(text) }),
  openStream: (_request, isRecall) => new ResponsesStream(isRecall),
}

/** An assistant message item of one text (no id: the upstream gave it none). */
export function textItem(text: string): Json {
  return {
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }],
  }
}

function instructionsOf(request: Json): string {
  return typeof request.instructions === 'string' ? request.instructions : ''
}

/** A developer or system message: what a client says before the conversation. */
function isInstruction(item: Json): boolean {
  return isMessage(item) && (item.role === 'developer' || item.role === 'system')
}

function tools(request: Json): unknown[] {
  return Array.isArray(request.tools) ? request.tools : []
}

/** An output item, and its call when it is one (a client with a tool named recall has no recall). */
export function partOf(item: Json): Part {
  if (item.type !== 'function_call' && item.type !== 'custom_tool_call') return { raw: item }
  const args =
    item.type === 'function_call'
      ? typeof item.arguments === 'string'
        ? item.arguments
        : ''
      : JSON.stringify({ input: typeof item.input === 'string' ? item.input : '' })
  const name = String(item.name ?? '')
  return {
    raw: item,
    call: { id: String(item.call_id ?? ''), type: 'function', function: { name, arguments: args } },
  }
}
