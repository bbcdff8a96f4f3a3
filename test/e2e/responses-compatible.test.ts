/**
 * What Responses-compatible servers stream besides OpenAI's own grammar (their sources'
 * formats), through the proxy across a recall: llama.cpp sends no `output_index` (a call is
 * named by its `call_id`, its arguments by `item_id`), LiteLLM puts a reasoning item and a
 * message at the same index, Ollama never finishes a message that a call follows. The recall
 * never reaches the client, and the round after it carries everything the model said.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  answersInTurn,
  llamaCppTooLong,
  namedSse,
  type FakeResponse,
} from '../helpers/fake-upstream.js'
import { proxyOnFake } from '../helpers/proxy.js'

const fixture = proxyOnFake()

type Said = { reasoning?: string; text?: string; recall?: boolean }

const RECALL_ARGS = JSON.stringify({ id: '#0001' })
const message = (id: string, text: string) => ({
  id,
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text, annotations: [] }],
})
const recallCall = {
  type: 'function_call',
  call_id: 'fc_r1',
  name: 'recall',
  arguments: RECALL_ARGS,
}
const usage = { input_tokens: 100, output_tokens: 10, total_tokens: 110 }

/** llama.cpp (tools/server/server-task.cpp): no output_index, no sequence_number, no call id. */
function llamaCpp(said: Said): FakeResponse {
  const events: object[] = [
    { type: 'response.created', response: { id: 'resp_l', status: 'in_progress' } },
  ]
  const output: object[] = []
  if (said.text) {
    events.push(
      { type: 'response.output_item.added', item: { ...message('msg_l', ''), content: [] } },
      { type: 'response.output_text.delta', item_id: 'msg_l', delta: said.text },
    )
  }
  if (said.recall)
    events.push(
      { type: 'response.output_item.added', item: { ...recallCall, arguments: '' } },
      { type: 'response.function_call_arguments.delta', item_id: 'fc_r1', delta: RECALL_ARGS },
    )
  if (said.text) output.push(message('msg_l', said.text))
  if (said.recall) output.push(recallCall)
  for (const item of output) events.push({ type: 'response.output_item.done', item })
  events.push({
    type: 'response.completed',
    response: { id: 'resp_l', status: 'completed', output, usage },
  })
  return namedSse(events)
}

/** LiteLLM's bridge: reasoning and message both at index 0, calls from 1, the message's done last. */
function liteLlm(said: Said): FakeResponse {
  const reasoning = {
    id: 'rs_m',
    type: 'reasoning',
    summary: [{ type: 'summary_text', text: said.reasoning }],
  }
  const events: object[] = [
    { type: 'response.created', response: { id: 'resp_m', status: 'in_progress' } },
  ]
  if (said.reasoning)
    events.push(
      {
        type: 'response.output_item.added',
        output_index: 0,
        item: { id: 'rs_m', type: 'reasoning', summary: null },
      },
      { type: 'response.output_item.done', output_index: 0, item: reasoning },
    )
  const call = { ...recallCall, id: 'fc_r1' }
  if (said.recall)
    events.push(
      { type: 'response.output_item.added', output_index: 1, item: { ...call, arguments: '' } },
      {
        type: 'response.function_call_arguments.delta',
        item_id: 'fc_r1',
        output_index: 1,
        delta: RECALL_ARGS,
      },
      { type: 'response.output_item.done', output_index: 1, item: call },
    )
  else
    events.push({
      type: 'response.output_text.delta',
      item_id: 'msg_m',
      output_index: 0,
      delta: said.text,
    })
  const text = message('msg_m', said.recall ? '' : (said.text ?? ''))
  events.push({ type: 'response.output_item.done', output_index: 0, item: text })
  const output = [...(said.reasoning ? [reasoning] : []), text, ...(said.recall ? [call] : [])]
  events.push({
    type: 'response.completed',
    response: { id: 'resp_m', status: 'completed', output, usage },
  })
  return namedSse(events)
}

/** Ollama (openai/responses.go): a message a call follows is never done; the call at its index. */
function ollama(said: Said): FakeResponse {
  const events: object[] = [
    { type: 'response.created', response: { id: 'resp_o', status: 'in_progress' } },
  ]
  const output: object[] = []
  if (said.text) {
    events.push(
      {
        type: 'response.output_item.added',
        output_index: 0,
        item: { ...message('msg_o', ''), content: [] },
      },
      {
        type: 'response.output_text.delta',
        item_id: 'msg_o',
        output_index: 0,
        content_index: 0,
        delta: said.text,
      },
    )
    output.push(message('msg_o', said.text))
  }
  const call = { ...recallCall, id: 'fc_o_0' }
  if (said.recall) {
    events.push(
      { type: 'response.output_item.added', output_index: 0, item: { ...call, arguments: '' } },
      {
        type: 'response.function_call_arguments.delta',
        item_id: 'fc_o_0',
        output_index: 0,
        delta: RECALL_ARGS,
      },
      { type: 'response.output_item.done', output_index: 0, item: call },
    )
    output.unshift(call)
  } else events.push({ type: 'response.output_item.done', output_index: 0, item: output[0] })
  events.push({
    type: 'response.completed',
    response: { id: 'resp_o', status: 'completed', output, usage },
  })
  return namedSse(events)
}

/** A streamed Codex turn after one result (#0001); the client's body and the upstream's requests. */
async function turn(session: string, answers: readonly (() => FakeResponse)[]) {
  const start = fixture.upstream.requests.length
  answersInTurn(fixture.upstream, answers)
  const response = await fetch(fixture.proxy.url + '/v1/responses', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
    body: JSON.stringify({
      model: 'qwen3-coder',
      instructions: 'You are Codex.',
      stream: true,
      prompt_cache_key: session,
      tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' } }],
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list' }] },
        {
          type: 'function_call',
          call_id: 'call_1',
          name: 'shell',
          arguments: '{"command":["ls"]}',
        },
        { type: 'function_call_output', call_id: 'call_1', output: 'a.txt\nb.txt' },
      ],
    }),
  })
  assert.equal(response.status, 200)
  return {
    client: await response.text(),
    sent: fixture.upstream.requests.slice(start).map((r) => r.json),
  }
}

const servers = { 'llama.cpp': llamaCpp, LiteLLM: liteLlm, Ollama: ollama }

for (const [name, server] of Object.entries(servers))
  test(`${name}: the recall stays hidden, the round after it carries what the model said`, async () => {
    const said: Said =
      name === 'LiteLLM'
        ? { reasoning: 'I should look again.', recall: true }
        : { text: 'Let me look.', recall: true }
    const { client, sent } = await turn(`compat-${name}`, [
      () => server(said),
      () => server({ text: 'Done.' }),
    ])
    assert.equal(sent.length, 2, 'the recall was answered and the model asked again')
    assert.doesNotMatch(client, /recall/, 'no event of the recall reached the client')
    assert.match(client, /event: response\.completed\n.*"text":"Done\."/)
    const input = JSON.stringify(sent[1].input)
    assert.match(input, /"call_id":"fc_r1","name":"recall"/)
    assert.match(input, /\[#0002 recall #0001 /)
    if (said.text) assert.match(input, /"text":"Let me look\."/, 'the words before the recall')
    if (said.reasoning) assert.match(input, /"type":"reasoning"/, 'the reasoning before the recall')
  })

test("a refused round after a recall: a server's numeric code and context error, as Codex knows it", async () => {
  const { client } = await turn('compat-refused', [
    () => llamaCpp({ text: 'Let me look.', recall: true }),
    llamaCppTooLong,
  ])
  assert.match(
    client,
    /"status":"failed","error":\{"code":"context_length_exceeded","message":"the request exceeds the available context size"\}/,
  )
})
