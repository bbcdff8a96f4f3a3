/**
 * What Anthropic-compatible servers put in a Messages stream besides Anthropic's own grammar,
 * through the proxy to a streaming client: a gateway's `data: [DONE]` after `message_stop`,
 * llama.cpp's own error body under `event: error`, an answer cut by `max_tokens` after a
 * recall, and a server's own error type when the round after a recall is refused.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { anthropicEvents, anthropicSse, assembleMessage } from '../helpers/fake-anthropic.js'
import type { Block } from '../helpers/fake-anthropic.js'
import { answersInTurn, llamaCppTooLong, namedSse } from '../helpers/fake-upstream.js'
import { proxyOnFake } from '../helpers/proxy.js'

const fixture = proxyOnFake()

const RECALL: Block = { type: 'tool_use', id: 'toolu_r1', name: 'recall', input: { id: '#0001' } }

/** A streamed turn of a session whose history holds one result (#0001); the client's events. */
async function turn(session: string): Promise<any[]> {
  const response = await fetch(fixture.proxy.url + '/v1/messages', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-test',
      'anthropic-version': '2023-06-01',
    },
    body: JSON.stringify({
      model: 'qwen3-coder',
      max_tokens: 100,
      stream: true,
      tools: [{ name: 'Bash', input_schema: { type: 'object' } }],
      metadata: { user_id: `user_x_account__session_${session}` },
      messages: [
        { role: 'user', content: 'list' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } }],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a\nb' }],
        },
      ],
    }),
  })
  assert.equal(response.status, 200)
  return anthropicSse(await response.text())
}

test("a gateway's `data: [DONE]` after `message_stop` ends the answer, no error", async () => {
  answersInTurn(fixture.upstream, [
    () => namedSse(anthropicEvents([{ type: 'text', text: 'Done.' }]), 'data: [DONE]\n\n'),
  ])
  const events = await turn('5f0c3a9e-1d2b-4c6a-9e7f-0a1b2c3d4e01')
  assert.deepEqual(
    events.map((event) => event.type).filter((type) => type === 'error' || type === 'message_stop'),
    ['message_stop'],
  )
  assert.equal(assembleMessage(events).content[0].text, 'Done.')
})

test("llama.cpp's error under `event: error` reaches the client in Anthropic's shape, its message kept", async () => {
  const [start] = anthropicEvents([])
  answersInTurn(fixture.upstream, [
    () =>
      namedSse(
        [start!],
        'event: error\ndata: {"code":500,"message":"Failed to parse tool call arguments as JSON","type":"server_error"}\n\n',
      ),
  ])
  const events = await turn('5f0c3a9e-1d2b-4c6a-9e7f-0a1b2c3d4e02')
  assert.deepEqual(events.at(-1), {
    type: 'error',
    error: { type: 'api_error', message: 'Failed to parse tool call arguments as JSON' },
  })
})

test('an answer cut by max_tokens after a recall still says max_tokens', async () => {
  const asked = answersInTurn(fixture.upstream, [
    () => namedSse(anthropicEvents([RECALL])),
    () => {
      const events: any[] = anthropicEvents([{ type: 'text', text: 'The first lines are' }])
      events.at(-2).delta.stop_reason = 'max_tokens'
      return namedSse(events)
    },
  ])
  const events = await turn('5f0c3a9e-1d2b-4c6a-9e7f-0a1b2c3d4e03')
  assert.equal(asked(), 2, 'the recall was answered and the model asked again')
  const message = assembleMessage(events)
  assert.equal(message.content.map((block) => block.type).join(), 'text')
  assert.equal(message.stop_reason, 'max_tokens')
})

test("the round after a recall refused with a server's own error type: Anthropic's type for its status", async () => {
  // The model says something first: the client's 200 is gone when the round is refused.
  const asked = answersInTurn(fixture.upstream, [
    () => namedSse(anthropicEvents([{ type: 'text', text: 'Let me look.' }, RECALL])),
    llamaCppTooLong,
  ])
  const events = await turn('5f0c3a9e-1d2b-4c6a-9e7f-0a1b2c3d4e04')
  assert.equal(asked(), 2)
  assert.deepEqual(events.at(-1), {
    type: 'error',
    error: {
      type: 'invalid_request_error',
      message: 'the request exceeds the available context size',
    },
  })
})
