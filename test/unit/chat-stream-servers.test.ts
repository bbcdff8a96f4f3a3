/**
 * What local model servers really stream, as each writes it (facts from their sources), through
 * the chat door's stream across a recall: the client sees the agent's call alone, whole, with
 * the role, and the round keeps each call apart for the upstream's next round.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ChatStream } from '../../src/doors/chat/stream.js'

const RECALL = { id: 'call_rc1', name: 'recall', args: '{"id":"#0001"}' }
const READ = { id: 'call_rd2', name: 'read', args: '{"path":"b.txt"}' }

type Call = typeof RECALL
type Delta = Record<string, unknown>

const chunk = (delta: Delta, finish: string | null = null) =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })

/** Ollama (openai/openai.go): no empty chunks, each call whole in a chunk, the role on the first. */
function ollama(calls: readonly Call[], sameIndex: boolean): string[] {
  return [
    ...calls.map((call, i) =>
      chunk({
        ...(i === 0 ? { role: 'assistant' } : {}),
        content: '',
        tool_calls: [
          {
            id: call.id,
            index: sameIndex ? 0 : i,
            type: 'function',
            function: { name: call.name, arguments: call.args },
          },
        ],
      }),
    ),
    chunk({}, 'tool_calls'),
  ]
}

/** SGLang 0.4: the id on every delta, the second call at index 0 again, null fields. */
function sglang(calls: readonly Call[]): string[] {
  const none = { role: null, content: null, reasoning_content: null }
  return [
    chunk({ role: 'assistant', content: '', reasoning_content: null, tool_calls: null }),
    ...calls.flatMap((call) => [
      chunk({
        ...none,
        tool_calls: [
          { id: call.id, index: 0, type: 'function', function: { name: call.name, arguments: '' } },
        ],
      }),
      chunk({
        ...none,
        tool_calls: [
          {
            id: call.id,
            index: 0,
            type: 'function',
            function: { name: null, arguments: call.args },
          },
        ],
      }),
    ]),
    chunk({ ...none, tool_calls: null }, 'tool_calls'),
  ]
}

/** A vLLM build that sends `id: ""` on the deltas after a call's first. */
function emptyLaterIds(calls: readonly Call[]): string[] {
  return [
    chunk({ role: 'assistant', content: '' }),
    ...calls.flatMap((call, index) => [
      chunk({
        tool_calls: [
          { id: call.id, index, type: 'function', function: { name: call.name, arguments: '' } },
        ],
      }),
      chunk({
        tool_calls: [{ id: '', index, type: 'function', function: { arguments: call.args } }],
      }),
    ]),
    chunk({}, 'tool_calls'),
  ]
}

/** llama.cpp before May 2025: the whole name again on every delta. */
function repeatedNames(calls: readonly Call[]): string[] {
  return [
    chunk({ role: 'assistant', content: null }),
    ...calls.flatMap((call, index) =>
      [call.args.slice(0, 5), call.args.slice(5)].map((args) =>
        chunk({
          tool_calls: [
            {
              index,
              ...(args === call.args.slice(0, 5) ? { id: call.id } : {}),
              function: { name: call.name, arguments: args },
            },
          ],
        }),
      ),
    ),
    chunk({}, 'tool_calls'),
  ]
}

/**
 * Mistral (the fixture of its own agent, mistral-vibe): a call's later deltas carry the id
 * "null" and the name "", and its last chunk the finish and the usage as well.
 */
function mistral(calls: readonly Call[]): string[] {
  return [
    chunk({ role: 'assistant', content: '' }),
    ...calls.flatMap((call, index) =>
      [call.args.slice(0, 5), call.args.slice(5)].map((args, piece) =>
        chunk({
          tool_calls: [
            {
              id: piece === 0 ? call.id : 'null',
              index,
              type: 'function',
              function: { name: piece === 0 ? call.name : '', arguments: args },
            },
          ],
        }),
      ),
    ),
    withUsage(chunk({}, 'tool_calls')),
  ]
}

const USAGE = { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 }
const withUsage = (data: string) => JSON.stringify({ ...JSON.parse(data), usage: USAGE })

/** One round through the door's stream: what the client got, and the round's calls. */
function round(events: readonly string[]) {
  const stream = new ChatStream({ stream: true }, (name) => name === 'recall')
  const out: string[] = []
  for (const data of [...events, '[DONE]']) out.push(...stream.take({ data }).out)
  const end = stream.endRound()
  out.push(...(end.out ?? []))
  const client = out.map((event) => JSON.parse(event.replace(/^data: /, '')))
  const deltas = client.map((c) => c.choices?.[0]?.delta ?? {})
  const visible = new Map<number, { id?: string; name: string; args: string }>()
  for (const delta of deltas)
    for (const part of delta.tool_calls ?? []) {
      const call = visible.get(part.index) ?? { name: '', args: '' }
      // The id a call began with (a later piece's is Mistral's "null").
      if (part.id) call.id ??= part.id
      call.name += part.function?.name ?? ''
      call.args += part.function?.arguments ?? ''
      visible.set(part.index, call)
    }
  const calls = end.parts.flatMap((part) => (part.call ? [part.call] : []))
  return { deltas, visible: [...visible.entries()], calls }
}

const servers = {
  Ollama: (calls: readonly Call[]) => ollama(calls, false),
  'Ollama 0.20 (every call at index 0)': (calls: readonly Call[]) => ollama(calls, true),
  'SGLang 0.4 (index 0 again, the id on every delta)': sglang,
  'vLLM (an empty id after the first delta)': emptyLaterIds,
  'llama.cpp before May 2025 (the name on every delta)': repeatedNames,
  'Mistral (the id "null" after a call\'s first delta)': mistral,
}

for (const [server, stream] of Object.entries(servers))
  for (const order of [
    [RECALL, READ],
    [READ, RECALL],
  ])
    test(`${server}: ${order[0]!.name} then ${order[1]!.name}`, () => {
      const { deltas, visible, calls } = round(stream(order))
      assert.deepEqual(visible, [[0, { id: READ.id, name: READ.name, args: READ.args }]])
      const first = deltas.findIndex((delta) => delta.tool_calls || delta.content)
      assert.ok(
        deltas.slice(0, first + 1).some((delta) => delta.role === 'assistant'),
        'the client learns the role before anything else',
      )
      assert.deepEqual(
        calls.map((call) => [call.id, call.function.name, call.function.arguments]),
        order.map((call) => [call.id, call.name, call.args]),
        'the upstream gets each call back as it made it',
      )
    })

test("Mistral, Gemini: the answer's last words, its finish and its usage in one chunk: each once", () => {
  const stream = new ChatStream(
    { stream: true, stream_options: { include_usage: true } },
    (name) => name === 'recall',
  )
  const events = [
    chunk({ role: 'assistant', content: 'Hello ' }),
    withUsage(chunk({ content: 'there.' }, 'length')),
    '[DONE]',
  ]
  const out = events.flatMap((data) => stream.take({ data }).out)
  const end = stream.endRound()
  // Nothing recalled: what was held goes out as it came.
  const client = [...out, ...(end.out ?? []), ...end.held]
  const sent = client.map((event) => event.replace(/^data: /, '').trim())
  assert.equal(sent.filter((data) => data === '[DONE]').length, 1)
  const chunks = sent.filter((data) => data !== '[DONE]').map((data) => JSON.parse(data))
  const text = chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')
  assert.equal(text, 'Hello there.')
  assert.deepEqual(
    chunks.flatMap((c) => (c.usage ? [c.usage] : [])),
    [USAGE],
  )
  assert.deepEqual(
    chunks.flatMap((c) => c.choices?.[0]?.finish_reason ?? []),
    ['length'],
  )
  assert.deepEqual(end.usage, USAGE)
})
