import {
  chatChunks,
  chatCompletion,
  type FakeResponse,
  type FakeScript,
  type RecordedRequest,
} from './fake-upstream.js'

/** What the scripted model says next: tool calls, or text; a thinking model reasons first. */
export type Say = (
  | { calls: { name: string; args: Record<string, unknown>; id?: string }[]; content?: string }
  | { content: string }
) & { reasoning?: string }

/**
 * A fake model that says the planned things in order, streaming when the request asks to. A
 * plan step may be a function of the request, to answer what the proxy sent.
 */
export function scriptedModel(
  plan: readonly (Say | ((request: RecordedRequest) => Say))[],
): FakeScript {
  let step = 0
  let callNumber = 0
  return (request) => {
    const next = plan[step++]
    if (!next)
      return { status: 500, body: JSON.stringify({ error: { message: 'the script ran out' } }) }
    const say = typeof next === 'function' ? next(request) : next
    const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 }
    const calls =
      'calls' in say
        ? say.calls.map((call) => ({
            id: call.id ?? `call_${++callNumber}`,
            name: call.name,
            arguments: JSON.stringify(call.args),
          }))
        : []
    const content = say.content
    if (request.json?.stream) {
      const response: FakeResponse = {
        sse: chatChunks({
          content: content === undefined ? [] : splitText(content),
          ...(say.reasoning === undefined ? {} : { reasoning: splitText(say.reasoning) }),
          toolCalls: calls.map((call) => ({ ...call, arguments: splitText(call.arguments) })),
          usage: request.json?.stream_options?.include_usage ? usage : undefined,
        }),
      }
      return response
    }
    return { json: chatCompletion({ content, toolCalls: calls, usage, reasoning: say.reasoning }) }
  }
}

/** Splits a text into a few deltas, as a model streams it. */
function splitText(text: string): string[] {
  const parts: string[] = []
  for (let i = 0; i < text.length; i += 7) parts.push(text.slice(i, i + 7))
  return parts.length > 0 ? parts : ['']
}

/** The chat requests the upstream received, parsed. */
export function chatRequests(requests: readonly RecordedRequest[]): any[] {
  return requests.filter((r) => r.pathname.endsWith('/chat/completions')).map((r) => r.json)
}

/**
 * Every upstream request's messages begin with the previous request's messages, byte for byte:
 * the prompt cache's promise. Checked per message and on the raw serialized array.
 */
export function prefixViolations(
  requests: readonly RecordedRequest[],
  /** Which requests (by path ending) and which of their arrays: chat's messages by default. */
  { path = '/chat/completions', field = 'messages' }: { path?: string; field?: string } = {},
): string[] {
  const chats = requests.filter((r) => r.pathname.endsWith(path))
  const problems: string[] = []
  for (let i = 1; i < chats.length; i++) {
    const before = chats[i - 1]!.json[field] as unknown[]
    const after = chats[i]!.json[field] as unknown[]
    const prefix = JSON.stringify(before).slice(0, -1)
    if (!chats[i]!.body.includes(prefix)) {
      const at = before.findIndex((m, k) => JSON.stringify(m) !== JSON.stringify(after[k]))
      problems.push(
        `request ${i + 1} changes message ${at}: ${JSON.stringify(before[at]).slice(0, 300)} -> ${JSON.stringify(after[at]).slice(0, 300)}`,
      )
    }
  }
  return problems
}

/** The texts of the tool messages a chat request carries (the first text part of parts). */
export function toolTexts(request: any): string[] {
  return request.messages
    .filter((m: any) => m.role === 'tool')
    .map((m: any) => (typeof m.content === 'string' ? m.content : m.content[0].text))
}
