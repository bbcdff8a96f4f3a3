import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { createStore } from '../../src/store/index.js'
import { assembleStream, TestAgent } from '../helpers/agent.js'
import {
  chatCompletion,
  startFakeUpstream,
  type FakeUpstream,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, scriptedModel } from '../helpers/model.js'
import { createLogger } from '../../src/log.js'
import {
  chatWithResults,
  loop,
  postChat,
  proxyOnFake,
  promptBlock,
  sseData,
  startProxy,
  type TestProxy,
} from '../helpers/proxy.js'
import { makeProject } from '../helpers/workspace.js'

const DAY = 86_400_000

function lastToolText(request: RecordedRequest): string {
  const tool = request.json.messages.filter((m: any) => m.role === 'tool').at(-1)
  return typeof tool.content === 'string' ? tool.content : tool.content[0].text
}

for (const stream of [false, true]) {
  describe(`recall answered by the proxy (${stream ? 'streaming' : 'non-streaming'})`, () => {
    let upstream: FakeUpstream
    let proxy: TestProxy
    let project: string
    before(async () => {
      upstream = await startFakeUpstream()
      project = makeProject()
      proxy = await startProxy({
        upstreamUrl: upstream.url,
        store: await createStore('memory:', { idleTtlMs: DAY }),
      })
    })
    after(async () => {
      await proxy.close()
      await upstream.close()
      rmSync(project, { recursive: true, force: true })
    })

    test('the client never sees a recall call, and the next request restores the hidden exchange', async () => {
      upstream.requests.length = 0
      let recalled = ''
      upstream.setScript(
        scriptedModel([
          { calls: [{ name: 'Bash', args: { command: 'seq 1 1000' } }] },
          {
            content: 'Let me look. ',
            calls: [{ name: 'recall', args: { id: '0001', offset: 500, limit: 3 } }],
          },
          (request) => {
            recalled = lastToolText(request)
            return { content: 'Line 500 says 500.' }
          },
          { content: 'You are welcome.' },
        ]),
      )
      const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project, stream })
      assert.equal(await agent.ask('What is on line 500?'), 'Let me look. Line 500 says 500.')
      assert.equal(recalled, '[#0002 recall #0001 lines 500-502 of 1000]\n500\n501\n502')
      assert.ok(
        agent.messages.every(
          (m) => !(m.tool_calls ?? []).some((c: any) => c.function.name === 'recall'),
        ),
        'no recall call reached the client',
      )
      assert.equal(await agent.ask('Thanks'), 'You are welcome.')
      const requests = chatRequests(upstream.requests)
      assert.equal(requests.length, 4)
      assert.deepEqual(prefixViolations(upstream.requests), [])
      const roles = requests[3].messages
        .slice(-5)
        .map((m: any) => m.role + (m.tool_calls ? '+calls' : ''))
      assert.deepEqual(roles, ['tool', 'assistant+calls', 'tool', 'assistant', 'user'])
      const restored = requests[3].messages.findIndex(
        (m: any) => m.tool_calls?.[0]?.function.name === 'recall',
      )
      assert.ok(restored > 0, 'the recall call is back in the upstream history')
      assert.equal(requests[3].messages[restored].content, 'Let me look. ')
      assert.equal(requests[3].messages[restored + 1].content, recalled)
      assert.equal(requests[3].messages[restored + 2].content, 'Line 500 says 500.')
      assert.equal(requests[3].messages[restored + 3].content, 'Thanks')
    })

    test('a recall next to a client tool call: recall answered, the other call returned with index 0', async () => {
      upstream.requests.length = 0
      upstream.setScript(
        scriptedModel([
          { calls: [{ name: 'Bash', args: { command: 'seq 1 900' } }] },
          {
            calls: [
              { name: 'recall', args: { id: '#0001', offset: 450, limit: 1 } },
              { name: 'Bash', args: { command: 'echo next' } },
            ],
          },
          { content: 'Done.' },
        ]),
      )
      const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project, stream })
      assert.equal(await agent.ask('Check line 450 and run echo'), 'Done.')
      const mixed = agent.messages.find((m) =>
        m.tool_calls?.some((c: any) => c.function.arguments.includes('echo')),
      )
      assert.equal(mixed?.tool_calls.length, 1)
      assert.equal(mixed?.tool_calls[0].function.name, 'Bash')
      const requests = chatRequests(upstream.requests)
      assert.equal(requests.length, 3, 'no extra upstream round: the client has a call to run')
      assert.deepEqual(prefixViolations(upstream.requests), [])
      const tail = requests[2].messages.slice(-3)
      assert.deepEqual(
        tail.map((m: any) => m.role),
        ['assistant', 'tool', 'tool'],
      )
      assert.deepEqual(
        tail[0].tool_calls.map((c: any) => c.function.name),
        ['recall', 'Bash'],
      )
      assert.match(tail[1].content, /^\[#0002 recall #0001 lines 450-450 of 900\]\n450$/)
      assert.match(tail[2].content, /^\[#0003\]\nnext\n$/)
    })

    test('a model that recalls four times is told it was the last, and its answer after reaches the client', async () => {
      upstream.requests.length = 0
      const again = (n: number) => ({
        calls: [{ name: 'recall', args: { id: '0001', offset: n, limit: 1 } }],
      })
      upstream.setScript(
        scriptedModel([
          { calls: [{ name: 'Bash', args: { command: 'seq 1 100' } }] },
          again(1),
          again(2),
          again(3),
          again(4),
          { content: 'Lines 1 to 4 are 1 to 4.' },
        ]),
      )
      const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project, stream })
      assert.equal(await agent.ask('Lines 1-4, one at a time.'), 'Lines 1 to 4 are 1 to 4.')
      const requests = upstream.requests.slice(-5)
      const last = lastToolText(requests.at(-1)!)
      assert.match(last, /^\[#\w+ recall #0001 lines 4-4 of 100\]\n4\n\n/)
      assert.ok(last.endsWith(loop.proxy.recall.last_round_note))
      // The answer's own id shows the answer alone.
      const id = /^\[(#\w+)/.exec(last)![1]
      upstream.setScript(
        scriptedModel([
          { calls: [{ name: 'recall', args: { id } }] },
          (request) => ({ content: lastToolText(request) }),
        ]),
      )
      const shown = await agent.ask('And that answer?')
      assert.ok(!shown.includes(loop.proxy.recall.last_round_note), shown)
      assert.deepEqual(prefixViolations(upstream.requests), [])
    })

    test('recall rounds are bounded; an unknown id is answered, not an error', async () => {
      upstream.requests.length = 0
      const forever = { calls: [{ name: 'recall', args: { id: '#ffff' } }] }
      upstream.setScript(scriptedModel([forever, forever, forever, forever, forever, forever]))
      // A session id: a turn of text alone names no session otherwise (see Known limits).
      const headers = { 'x-session-id': `bounded-${stream}` }
      const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project, stream, headers })
      // Not an empty turn, which agents ask again for: the proxy says why it ends.
      assert.equal(await agent.ask('Look it up.'), loop.proxy.recall.limit_answer)
      assert.equal(agent.messages.at(-1)!.tool_calls, undefined)
      const requests = chatRequests(upstream.requests)
      assert.equal(
        requests.length,
        5,
        'max_rounds answered rounds, one more ask after the note, then the proxy stops asking',
      )
      const note = loop.proxy.recall.last_round_note
      const lastTools = upstream.requests.slice(1).map((r) => lastToolText(r))
      assert.deepEqual(
        lastTools.map((text) => text.endsWith('\n\n' + note)),
        [false, false, false, true],
        'only the answers of the last round say so',
      )
      assert.match(
        lastToolText(upstream.requests[1]!),
        /^\[#\w+\] No stored result #ffff in this session\.$/,
      )
      // The client sends that answer back: the upstream gets the exchange the model had.
      upstream.setScript(scriptedModel([{ content: 'Done.' }]))
      assert.equal(await agent.ask('Go on.'), 'Done.')
      const after = chatRequests(upstream.requests).at(-1)!.messages
      assert.ok(!JSON.stringify(after).includes(loop.proxy.recall.limit_answer))
      assert.equal(
        after.filter((m: any) => m.tool_calls?.[0]?.function.name === 'recall').length,
        5,
      )
      assert.deepEqual(prefixViolations(upstream.requests), [])
    })
  })
}

/**
 * DeepSeek in thinking mode refuses a tool-call turn whose assistant message lacks its
 * `reasoning_content` (api-docs.deepseek.com/guides/thinking_mode#tool-calls): this fake does too.
 */
function refusesWithoutReasoning(request: RecordedRequest) {
  const messages: any[] = request.json.messages
  const lastUser = messages.findLastIndex((m) => m.role === 'user')
  const bare = messages.findIndex(
    (m, i) =>
      i > lastUser &&
      m.role === 'assistant' &&
      m.tool_calls &&
      typeof m.reasoning_content !== 'string',
  )
  if (bare < 0) return undefined
  const message = `Missing \`reasoning_content\` field in the assistant message at message index ${bare}.`
  return {
    status: 400,
    body: JSON.stringify({ error: { message, type: 'invalid_request_error' } }),
  }
}

/** The assistant message a client assembles from a streamed answer, reasoning included. */
function assembledMessage(text: string): any {
  const message: any = { role: 'assistant', content: '', reasoning_content: '' }
  for (const data of sseData(text)) {
    if (data === '[DONE]') continue
    const delta = JSON.parse(data).choices?.[0]?.delta ?? {}
    if (typeof delta.content === 'string') message.content += delta.content
    if (typeof delta.reasoning_content === 'string')
      message.reasoning_content += delta.reasoning_content
  }
  return message
}

for (const stream of [false, true]) {
  describe(`recall with a thinking model on chat (${stream ? 'streaming' : 'non-streaming'})`, () => {
    const fixture = proxyOnFake()

    test("a recall round sends the model's reasoning_content back with its call (DeepSeek refuses it otherwise)", async () => {
      const model = scriptedModel([
        {
          reasoning: 'Line 500 is in #0001. ',
          calls: [{ name: 'recall', args: { id: '0001', offset: 500, limit: 1 } }],
        },
        { reasoning: 'It says 500.', content: 'Line 500 says 500.' },
        { content: 'Bye.' },
      ])
      fixture.upstream.setScript(
        (request, index) => refusesWithoutReasoning(request) ?? model(request, index),
      )
      const body = {
        model: 'deepseek-reasoner',
        stream,
        tools: [{ type: 'function', function: { name: 'Bash' } }],
        messages: [
          { role: 'user', content: 'line 500?' },
          {
            role: 'assistant',
            content: null,
            reasoning_content: 'Run seq.',
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'Bash', arguments: '{}' } },
            ],
          },
          {
            role: 'tool',
            tool_call_id: 'c1',
            content: Array.from({ length: 1000 }, (_, i) => i + 1).join('\n'),
          },
        ],
        user: `thinking-${stream}`,
      }
      const first = await postChat(fixture.proxy.url, body, {
        'x-session-id': `thinking-${stream}`,
      })
      assert.equal(first.status, 200, first.text)
      const answer = stream ? assembledMessage(first.text) : first.json.choices[0].message
      assert.equal(answer.content, 'Line 500 says 500.')
      assert.equal(answer.reasoning_content, 'Line 500 is in #0001. It says 500.')
      const round = chatRequests(fixture.upstream.requests)[1].messages.at(-2)
      assert.equal(round.tool_calls[0].function.name, 'recall')
      assert.equal(round.reasoning_content, 'Line 500 is in #0001. ')
      const next = {
        ...body,
        messages: [...body.messages, answer, { role: 'user', content: 'Thanks' }],
      }
      const second = await postChat(fixture.proxy.url, next, {
        'x-session-id': `thinking-${stream}`,
      })
      assert.equal(second.status, 200, second.text)
      assert.deepEqual(prefixViolations(fixture.upstream.requests), [])
      const restored = chatRequests(fixture.upstream.requests)[2].messages.slice(-5)
      // The hidden exchange comes back with each round's own reasoning.
      assert.deepEqual(
        restored.map((m: any) => m.role + ':' + (m.reasoning_content ?? '')),
        ['tool:', 'assistant:Line 500 is in #0001. ', 'tool:', 'assistant:It says 500.', 'user:'],
      )
    })
  })
}

describe('recall with OpenRouter reasoning blocks and Gemini thought signatures (streaming)', () => {
  test('the round gets the blocks joined piece by piece, signature kept, and the call its extra_content', async () => {
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
    })
    try {
      const chunk = (delta: object, finish: string | null = null) => ({
        id: 'gen-1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'anthropic/claude-sonnet-4.5',
        choices: [{ index: 0, delta, finish_reason: finish }],
      })
      const piece = (fields: object) => ({ type: 'reasoning.text', index: 0, ...fields })
      let round: any
      upstream.setScript((request, index) => {
        if (index === 0)
          return {
            sse: [
              chunk({
                role: 'assistant',
                content: '',
                reasoning: 'Think',
                reasoning_details: [piece({ text: 'Think', format: 'anthropic-claude-v1' })],
              }),
              chunk({ reasoning: 'ing.', reasoning_details: [piece({ text: 'ing.' })] }),
              chunk({ reasoning_details: [piece({ signature: 'sig-xyz' })] }),
              chunk({
                tool_calls: [
                  {
                    index: 0,
                    id: 'call_r',
                    type: 'function',
                    function: { name: 'recall', arguments: '' },
                    extra_content: { google: { thought_signature: 'TS1' } },
                  },
                ],
              }),
              chunk({ tool_calls: [{ index: 0, function: { arguments: '{"id":"0001"}' } }] }),
              chunk({}, 'tool_calls'),
            ],
          }
        round = request.json.messages.at(-2)
        return { sse: [chunk({ role: 'assistant', content: 'ok' }), chunk({}, 'stop')] }
      })
      const body = { ...chatWithResults([{ id: 'c1', output: 'a\nb' }]), stream: true }
      const answer = await postChat(proxy.url, body)
      assert.equal(answer.status, 200, answer.text)
      assert.equal(round.reasoning, 'Thinking.')
      assert.deepEqual(round.reasoning_details, [
        piece({ text: 'Thinking.', format: 'anthropic-claude-v1', signature: 'sig-xyz' }),
      ])
      assert.deepEqual(round.tool_calls[0].extra_content, { google: { thought_signature: 'TS1' } })
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

describe('a request sent again (the agent retried it)', () => {
  const fixture = proxyOnFake()

  test("a recall under the same call id with other arguments gets its own answer; the same arguments the first answer's bytes", async () => {
    const lines = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join('\n')
    const body = chatWithResults([{ id: 'c1', output: lines }])
    const recalledBy: string[] = []
    let offset = 1
    // A server that names every call `call_0`: the retry's recall differs only in its arguments.
    fixture.upstream.setScript((request) => {
      const last = request.json.messages.at(-1)
      if (last.tool_call_id === 'call_0') {
        recalledBy.push(last.content)
        return { json: chatCompletion({ content: 'seen' }) }
      }
      const args = JSON.stringify({ id: '#0001', offset, limit: 2 })
      return {
        json: chatCompletion({ toolCalls: [{ id: 'call_0', name: 'recall', arguments: args }] }),
      }
    })
    for (const at of [1, 30, 1]) {
      offset = at
      const answer = await postChat(fixture.proxy.url, body)
      assert.equal(answer.status, 200, answer.text)
    }
    assert.match(recalledBy[0]!, /^\[#0002 recall #0001 lines 1-2 of 40\]\nline 1\nline 2$/)
    assert.match(recalledBy[1]!, /^\[#0003 recall #0001 lines 30-31 of 40\]\nline 30\nline 31$/)
    assert.equal(recalledBy[2], recalledBy[0], 'the same call again: the same bytes')
  })
})

describe('streaming details', () => {
  test('usage: the last round’s input and every round’s output; one [DONE], chunk ids of the first round', async () => {
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
    })
    try {
      upstream.setScript(
        scriptedModel([
          { calls: [{ name: 'recall', args: { id: '#0001' } }] },
          { content: 'Nothing stored yet.' },
        ]),
      )
      const reply = await postChat(proxy.url, {
        model: 'm',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'hi' }],
        tools: [
          {
            type: 'function',
            function: { name: 'Bash', parameters: { type: 'object', properties: {} } },
          },
        ],
      })
      assert.equal(reply.status, 200)
      assert.match(reply.headers.get('content-type') ?? '', /text\/event-stream/)
      const data = sseData(reply.text)
      assert.equal(data.filter((d) => d === '[DONE]').length, 1)
      const chunks = data.slice(0, -1).map((d) => JSON.parse(d))
      const usage = chunks.filter((c) => c.usage).map((c) => c.usage)
      // The input as the last round had it (the context now: agents compact by it), the output of both.
      assert.deepEqual(usage, [{ prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 }])
      assert.deepEqual(new Set(chunks.map((c) => c.id)), new Set(['chatcmpl-fake']))
      assert.equal(assembleStream(reply.text).content, 'Nothing stored yet.')
      const first = upstream.requests[0]!.json.messages[0]
      assert.deepEqual(
        first,
        { role: 'system', content: promptBlock },
        'a system message is added for the block',
      )
      assert.equal(
        chunks
          .filter((c) => c.choices?.[0]?.finish_reason)
          .map((c) => c.choices[0].finish_reason)
          .join(),
        'stop',
      )
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })

  test('a client that defines its own recall tool keeps it: the proxy adds none, intercepts nothing, and logs it', async () => {
    const upstream = await startFakeUpstream()
    const lines: string[] = []
    const log = createLogger('info', (line) => lines.push(line))
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      log,
    })
    try {
      upstream.setScript(scriptedModel([{ calls: [{ name: 'recall', args: { query: 'x' } }] }]))
      const reply = await postChat(proxy.url, {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [
          {
            type: 'function',
            function: { name: 'recall', parameters: { type: 'object', properties: {} } },
          },
        ],
      })
      assert.equal(reply.json.choices[0].message.tool_calls[0].function.name, 'recall')
      assert.equal(upstream.requests[0]!.json.tools.length, 1)
      assert.ok(lines.some((line) => JSON.parse(line).event === 'recall-left-to-client'))
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})
