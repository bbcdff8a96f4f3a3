import { prefixViolations } from './model.js'
import type { FakeResponse, FakeScript, RecordedRequest } from './fake-upstream.js'

/** What a scripted Responses model says next: function calls, or text; a reasoning model first reasons. */
export type ResponsesSay = (
  { calls: { name: string; args: Record<string, unknown>; id?: string }[] } | { text: string }
) & { reasoning?: { summary: string; encrypted?: string } }

/** A reasoning item, as a stateless request (`include: ["reasoning.encrypted_content"]`) gets it. */
function reasoningItem(say: ResponsesSay, n: number): Record<string, unknown>[] {
  if (!say.reasoning) return []
  const summary = [{ type: 'summary_text', text: say.reasoning.summary }]
  const { encrypted } = say.reasoning
  // Without `encrypted`: as a stored request (`store: true`) gets it, to refer back to by its id.
  return [
    {
      type: 'reasoning',
      id: 'rs_' + n,
      summary,
      ...(encrypted === undefined ? {} : { encrypted_content: encrypted }),
    },
  ]
}

const usage = {
  input_tokens: 100,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 10,
  total_tokens: 110,
}

/** The output items of one answer. */
function outputItems(say: ResponsesSay, callNumber: () => number): Record<string, unknown>[] {
  const reasoning = reasoningItem(say, callNumber())
  if ('text' in say)
    return [
      ...reasoning,
      {
        type: 'message',
        id: 'msg_' + callNumber(),
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: say.text, annotations: [] }],
      },
    ]
  const calls = say.calls.map((call) => {
    const n = callNumber()
    return {
      type: 'function_call',
      id: 'fc_' + n,
      status: 'completed',
      call_id: call.id ?? 'call_' + n,
      name: call.name,
      arguments: JSON.stringify(call.args),
    }
  })
  return [...reasoning, ...calls]
}

/** A whole Responses API object. */
export function responsesJson(id: string, output: Record<string, unknown>[]) {
  return { id, object: 'response', status: 'completed', model: 'fake', output, usage }
}

/** The Responses event grammar for one answer, as OpenAI streams it. */
export function responsesEvents(id: string, output: Record<string, unknown>[]): object[] {
  let sequence = 0
  const events: Record<string, unknown>[] = []
  const push = (event: Record<string, unknown>) =>
    events.push({ ...event, sequence_number: sequence++ })
  const base = { id, object: 'response', model: 'fake', output: [] }
  push({ type: 'response.created', response: { ...base, status: 'in_progress' } })
  push({ type: 'response.in_progress', response: { ...base, status: 'in_progress' } })
  output.forEach((item, index) => {
    if (item.type === 'reasoning') {
      // Its summary streams; the encrypted content comes only with the finished item.
      const { encrypted_content: _, ...opening } = item
      push({
        type: 'response.output_item.added',
        output_index: index,
        item: { ...opening, summary: [] },
      })
      const text = (item.summary as { text: string }[])[0]!.text
      push({
        type: 'response.reasoning_summary_text.delta',
        item_id: item.id,
        output_index: index,
        summary_index: 0,
        delta: text,
      })
      push({
        type: 'response.reasoning_summary_text.done',
        item_id: item.id,
        output_index: index,
        summary_index: 0,
        text,
      })
    } else if (item.type === 'message') {
      const text = (item.content as { text: string }[])[0]!.text
      push({
        type: 'response.output_item.added',
        output_index: index,
        item: { ...item, status: 'in_progress', content: [] },
      })
      push({
        type: 'response.content_part.added',
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      })
      for (let i = 0; i < text.length; i += 5)
        push({
          type: 'response.output_text.delta',
          item_id: item.id,
          output_index: index,
          content_index: 0,
          delta: text.slice(i, i + 5),
        })
      push({
        type: 'response.output_text.done',
        item_id: item.id,
        output_index: index,
        content_index: 0,
        text,
      })
    } else {
      // A call's arguments stream in pieces; a freeform tool's input (Codex's apply_patch) too,
      // as text of its own.
      const custom = item.type === 'custom_tool_call'
      const field = custom ? 'input' : 'arguments'
      const events = custom ? 'custom_tool_call_input' : 'function_call_arguments'
      push({
        type: 'response.output_item.added',
        output_index: index,
        item: { ...item, status: 'in_progress', [field]: '' },
      })
      const whole = String(item[field])
      const size = custom ? 40 : 6
      for (let i = 0; i < whole.length; i += size)
        push({
          type: `response.${events}.delta`,
          item_id: item.id,
          output_index: index,
          delta: whole.slice(i, i + size),
        })
      push({
        type: `response.${events}.done`,
        item_id: item.id,
        output_index: index,
        [field]: whole,
      })
    }
    push({ type: 'response.output_item.done', output_index: index, item })
  })
  push({
    type: 'response.completed',
    response: { ...base, status: 'completed', output, usage },
  })
  return events
}

/** A fake Responses model that says the planned things in order, streaming when asked to. */
export function scriptedResponses(
  plan: readonly (ResponsesSay | ((request: RecordedRequest) => ResponsesSay))[],
): FakeScript {
  let step = 0
  let n = 0
  return (request) => {
    const next = plan[step++]
    if (!next)
      return { status: 500, body: JSON.stringify({ error: { message: 'the script ran out' } }) }
    const say = typeof next === 'function' ? next(request) : next
    const output = outputItems(say, () => ++n)
    const id = 'resp_' + step
    const response: FakeResponse = request.json?.stream
      ? { sse: responsesEvents(id, output), done: false }
      : { json: responsesJson(id, output) }
    return response
  }
}

/** The Responses requests the upstream received, parsed. */
export function responsesRequests(requests: readonly RecordedRequest[]): any[] {
  return requests.filter((r) => r.pathname.endsWith('/responses')).map((r) => r.json)
}

/** Every request's input begins with the previous one's input items, byte for byte. */
export function inputPrefixViolations(requests: readonly RecordedRequest[]): string[] {
  const sent = requests.filter((r) => r.pathname.endsWith('/responses'))
  const problems = prefixViolations(requests, { path: '/responses', field: 'input' })
  for (let i = 1; i < sent.length; i++) {
    if (sent[i]!.json.instructions !== sent[i - 1]!.json.instructions)
      problems.push(`request ${i + 1} changes the instructions`)
  }
  return problems
}

/** The data payloads of a Responses SSE body, parsed. */
export function responsesEventsOf(text: string): any[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) =>
      JSON.parse(
        block
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n'),
      ),
    )
}
