import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createStore } from '../../src/store/index.js'
import {
  anthropicSse,
  assembleMessage,
  messagesRequests,
  scriptedClaude,
} from '../helpers/fake-anthropic.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { prefixViolations } from '../helpers/model.js'
import { loop, promptBlock, startProxy, type TestProxy } from '../helpers/proxy.js'

const DAY = 86_400_000

const TOOLS = [
  {
    name: 'Bash',
    description: 'Runs a command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
  {
    name: 'Read',
    description: 'Reads a file',
    input_schema: { type: 'object', properties: { file_path: { type: 'string' } } },
    cache_control: { type: 'ephemeral' },
  },
]

const SYSTEM = [
  { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
]

function seq(n: number): string {
  return Array.from({ length: n }, (_, i) => String(i + 1)).join('\n')
}

async function postMessages(
  url: string,
  body: unknown,
): Promise<{ status: number; text: string; json: any }> {
  const response = await fetch(url + '/v1/messages', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'prompt-caching-2024-07-31',
    },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, text, json }
}

/** A small Claude Code: keeps its messages, runs the tool calls with canned outputs. */
class Client {
  readonly messages: any[] = []
  /** Claude Code's own form: the session's uuid at the end of metadata.user_id. */
  readonly user = `user_abc_account__session_${randomUUID()}`
  /** The events of the last streamed answer. */
  events: any[] = []
  constructor(
    private readonly url: string,
    private readonly stream: boolean,
  ) {}

  async send(): Promise<{ content: any[]; stop_reason: string }> {
    const reply = await postMessages(this.url, {
      model: 'claude-test',
      max_tokens: 1024,
      system: SYSTEM,
      tools: TOOLS,
      metadata: { user_id: this.user },
      messages: this.messages,
      ...(this.stream ? { stream: true } : {}),
    })
    assert.equal(reply.status, 200, reply.text)
    if (this.stream) this.events = anthropicSse(reply.text)
    const message = this.stream ? assembleMessage(this.events) : reply.json
    this.messages.push({ role: 'assistant', content: message.content })
    return message
  }

  async ask(text: string): Promise<{ content: any[]; stop_reason: string }> {
    this.messages.push({ role: 'user', content: [{ type: 'text', text }] })
    return this.send()
  }

  /** Answers the last tool calls; `mark` puts a cache breakpoint on the results. */
  async answer(
    outputs: Record<string, unknown>,
    mark = false,
  ): Promise<{ content: any[]; stop_reason: string }> {
    const last = this.messages.at(-1)
    const results = last.content
      .filter((b: any) => b.type === 'tool_use')
      .map((b: any) => ({
        type: 'tool_result',
        tool_use_id: b.id,
        content: outputs[b.name],
        ...(mark ? { cache_control: { type: 'ephemeral' } } : {}),
      }))
    this.messages.push({ role: 'user', content: results })
    return this.send()
  }
}

function upstreamMessages(upstream: FakeUpstream): any[] {
  return messagesRequests(upstream.requests).map((r) => r.json)
}

/** Every upstream request's messages begin with the previous one's, byte for byte. */
const historyChanges = (upstream: FakeUpstream) =>
  prefixViolations(upstream.requests, { path: '/messages' })

for (const stream of [false, true]) {
  describe(`POST /v1/messages (${stream ? 'streaming' : 'non-streaming'})`, () => {
    let upstream: FakeUpstream
    let proxy: TestProxy
    before(async () => {
      upstream = await startFakeUpstream()
      proxy = await startProxy({
        upstreamUrl: upstream.url,
        store: await createStore('memory:', { idleTtlMs: DAY }),
      })
    })
    after(async () => {
      await proxy.close()
      await upstream.close()
    })

    test('tool results get ids and caps, earlier messages stay byte-identical, breakpoints stay', async () => {
      upstream.requests.length = 0
      upstream.setScript(
        scriptedClaude([
          { tools: [{ name: 'Bash', input: { command: 'seq 1 5' } }] },
          { text: 'Now more.', tools: [{ name: 'Bash', input: { command: 'seq 1 20000' } }] },
          { text: 'Done.' },
          { text: 'Bye.' },
        ]),
      )
      const client = new Client(proxy.url, stream)
      await client.ask('count')
      await client.answer({ Bash: seq(5) })
      // Claude Code marks a breakpoint on its newest tool result.
      const big = await client.answer({ Bash: [{ type: 'text', text: seq(20000) }] }, true)
      assert.equal(big.content[0].text, 'Done.')
      await client.ask('thanks')

      const requests = upstreamMessages(upstream)
      assert.equal(requests.length, 4)
      assert.deepEqual(historyChanges(upstream), [])
      for (const request of requests) {
        assert.equal(messagesRequests(upstream.requests)[0]!.path, '/v1/messages')
        assert.deepEqual(request.system.slice(0, 1), SYSTEM)
        assert.deepEqual(request.system[1], { type: 'text', text: promptBlock })
        assert.deepEqual(
          request.tools.map((t: any) => t.name),
          ['Bash', 'Read', 'recall'],
        )
        const recall = request.tools[2]
        assert.deepEqual(Object.keys(recall), ['name', 'description', 'input_schema'])
        assert.equal(recall.input_schema.type, 'object')
        assert.deepEqual(request.tools[1].cache_control, { type: 'ephemeral' })
      }
      const last = requests[3]
      const first = last.messages[2].content[0]
      assert.equal(first.type, 'tool_result')
      assert.equal(typeof first.content, 'string')
      assert.match(first.content, /#0001/)
      const second = last.messages[4].content[0]
      assert.ok(Array.isArray(second.content), 'a parts array stays an array')
      assert.match(second.content[0].text, /#0002/)
      assert.ok(second.content[0].text.length < seq(20000).length / 2, 'the long result is capped')
      assert.deepEqual(second.cache_control, { type: 'ephemeral' }, 'the breakpoint stays')
      const breakpoints = JSON.stringify(last.messages).match(/cache_control/g) ?? []
      assert.equal(breakpoints.length, 1, 'no breakpoint is added')
      const headers = messagesRequests(upstream.requests)[0]!.headers
      assert.equal(headers['x-api-key'], 'sk-ant-test')
      assert.equal(headers['anthropic-version'], '2023-06-01')
      assert.equal(headers['anthropic-beta'], 'prompt-caching-2024-07-31')
    })

    test('recall is answered by the proxy and the next request restores it', async () => {
      upstream.requests.length = 0
      let recalled = ''
      upstream.setScript(
        scriptedClaude([
          { tools: [{ name: 'Bash', input: { command: 'seq 1 1000' } }] },
          {
            text: 'Let me look. ',
            tools: [{ name: 'recall', input: { id: '0001', offset: 500, limit: 3 } }],
          },
          (request) => {
            const user = request.json.messages.at(-1)
            recalled = user.content[0].content
            return { text: 'Line 500 says 500.' }
          },
          { text: 'You are welcome.' },
        ]),
      )
      const client = new Client(proxy.url, stream)
      client.messages.push({ role: 'user', content: 'line 500?' })
      await client.send()
      const reply = await client.answer({ Bash: seq(1000) })
      assert.match(recalled, /^\[#\d+ recall #0001 lines 500-502 of 1000\]\n500\n501\n502$/)
      assert.deepEqual(
        reply.content.map((b: any) => b.type),
        ['text', 'text'].slice(0, reply.content.length),
      )
      assert.ok(
        !JSON.stringify(client.messages).includes('"recall"'),
        'no recall reached the client',
      )
      assert.equal(
        reply.content.map((b: any) => b.text).join(''),
        'Let me look. Line 500 says 500.',
      )
      assert.equal(reply.stop_reason, 'end_turn')
      if (stream) {
        const types = client.events.map((e) => e.type)
        assert.equal(types[0], 'message_start')
        assert.equal(types.filter((t) => t === 'message_start').length, 1)
        assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop'])
        assert.equal(types.filter((t) => t === 'message_stop').length, 1)
        const starts = client.events.filter((e) => e.type === 'content_block_start')
        assert.deepEqual(
          starts.map((e) => e.index),
          starts.map((_, i) => i),
          'block indexes run 0, 1, … without the recall',
        )
        // Input from each round's message_start, output from its message_delta: both rounds.
        assert.deepEqual(
          client.events.at(-2).usage,
          { input_tokens: 100, output_tokens: 20 },
          'the last round’s input, both rounds’ output',
        )
      }
      await client.ask('Thanks')
      const requests = upstreamMessages(upstream)
      assert.equal(requests.length, 4)
      assert.deepEqual(historyChanges(upstream), [])
      const restored = JSON.stringify(requests[3].messages)
      assert.ok(restored.includes('"name":"recall"'), 'the recall is back in the upstream history')
    })

    test('a recall round sends the thinking blocks back whole, signatures included (extended thinking)', async () => {
      upstream.requests.length = 0
      const first = { thinking: 'The user wants line 7. '.repeat(3), signature: 'sig-A'.repeat(20) }
      const second = { thinking: 'Recall showed it.', signature: 'sig-B'.repeat(20) }
      upstream.setScript(
        scriptedClaude([
          { tools: [{ name: 'Bash', input: { command: 'seq 1 1000' } }] },
          {
            thinking: first,
            redacted: 'EncryptedOpaque==',
            tools: [{ name: 'recall', input: { id: '0001', offset: 7, limit: 1 } }],
          },
          { thinking: second, text: 'Line 7 says 7.' },
          { text: 'Bye.' },
        ]),
      )
      const client = new Client(proxy.url, stream)
      client.messages.push({ role: 'user', content: 'line 7?' })
      await client.send()
      const reply = await client.answer({ Bash: seq(1000) })
      const requests = upstreamMessages(upstream)
      // The API refuses a tool_use turn whose thinking is missing or altered (extended thinking).
      const sent = requests[2].messages.at(-2)
      assert.deepEqual(
        sent.content.filter((b: any) => b.type !== 'tool_use'),
        [
          { type: 'thinking', ...first },
          { type: 'redacted_thinking', data: 'EncryptedOpaque==' },
        ],
      )
      assert.equal(sent.content.at(-1).name, 'recall')
      // The client gets both rounds' thinking, as it must send them back on its next turn.
      assert.deepEqual(
        reply.content.filter((b: any) => b.type !== 'text'),
        [
          { type: 'thinking', ...first },
          { type: 'redacted_thinking', data: 'EncryptedOpaque==' },
          { type: 'thinking', ...second },
        ],
      )
      await client.ask('Thanks')
      assert.deepEqual(historyChanges(upstream), [])
      const restored = upstreamMessages(upstream)[3].messages
      assert.ok(JSON.stringify(restored).includes(JSON.stringify(first.signature)))
    })

    test('a model that keeps calling recall gets an answer that says so, not an empty turn', async () => {
      upstream.requests.length = 0
      const forever = { tools: [{ name: 'recall', input: { id: '0001' } }] }
      upstream.setScript(
        scriptedClaude([
          { tools: [{ name: 'Bash', input: { command: 'seq 1 10' } }] },
          ...Array(5).fill(forever),
          { text: 'Going on.' },
        ]),
      )
      const client = new Client(proxy.url, stream)
      client.messages.push({ role: 'user', content: 'look' })
      await client.send()
      const reply = await client.answer({ Bash: seq(10) })
      assert.deepEqual(reply.content, [{ type: 'text', text: loop.proxy.recall.limit_answer }])
      assert.equal(reply.stop_reason, 'end_turn')
      if (stream) {
        const starts = client.events.filter((e) => e.type === 'content_block_start')
        assert.deepEqual(
          starts.map((e) => e.index),
          [0],
        )
        assert.equal(client.events.filter((e) => e.type === 'message_stop').length, 1)
      }
      await client.ask('Go on.')
      const last = JSON.stringify(upstreamMessages(upstream).at(-1).messages)
      assert.ok(!last.includes(loop.proxy.recall.limit_answer), 'the model sees its own exchange')
      assert.equal(last.split('"name":"recall"').length - 1, 5)
      assert.deepEqual(historyChanges(upstream), [])
    })

    test('upstream errors pass through', async () => {
      upstream.setScript(() => ({
        status: 429,
        body: JSON.stringify({
          type: 'error',
          error: { type: 'rate_limit_error', message: 'slow' },
        }),
        headers: { 'retry-after': '3' },
      }))
      const reply = await postMessages(proxy.url, {
        model: 'claude-test',
        max_tokens: 10,
        tools: TOOLS,
        messages: [{ role: 'user', content: 'hi' }],
        ...(stream ? { stream: true } : {}),
      })
      assert.equal(reply.status, 429)
      assert.equal(reply.json.error.type, 'rate_limit_error')
    })
  })
}

describe('POST /v1/messages refusals', () => {
  test('a body that is not a Messages request is a 400 in Anthropic shape', async () => {
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
    })
    try {
      const reply = await postMessages(proxy.url, { messages: 'nope' })
      assert.equal(reply.status, 400)
      assert.equal(reply.json.type, 'error')
      assert.equal(reply.json.error.type, 'invalid_request_error')
      assert.equal(upstream.requests.length, 0)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

describe('Claude Code 2.1.332 results through the Messages door', () => {
  // As the CLI sent them: the last `41\t` of a file ending in a newline trimmed to `41` before
  // its reminder, and the Edit sentence's "no need to Read it back" tail.
  // N falls every turn: a volatile envelope that must stop neither a stub nor a dedupe.
  const reminder = (left: number) =>
    `\n\n<system-reminder>\n<total_tokens>${left} tokens left</total_tokens>\n</system-reminder>`
  const REMINDER = reminder(14999840)
  const file = '/tmp/cc-check/proj4/notes.txt'
  const lines = Array.from({ length: 40 }, (_, i) =>
    i === 19
      ? 'line 20: the twentieth line of the file'
      : `line ${i + 1}: some ordinary text number ${i + 1}`,
  )
  const read = lines.map((line, i) => `${i + 1}\t${line}`).join('\n') + '\n41' + REMINDER
  const edited =
    `The file ${file} has been updated successfully. (file state is current in your context — no need to Read it back)` +
    "\n\n<system-reminder>\nThe task tools haven't been used recently. If you're working on tasks that would benefit from tracking progress, consider using TaskCreate to add new tasks and TaskUpdate to update task status (set to in_progress when starting, completed when done). Also consider cleaning up the task list if it has become stale. Only use these if relevant to the current work. This is just a gentle reminder - ignore if not applicable.\n\n</system-reminder>" +
    REMINDER

  test('a full read gets its bracket, the re-read a stub, the edit a diff (blind)', async () => {
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
    })
    try {
      const edit = {
        replace_all: false,
        file_path: file,
        old_string: 'line 20: the twentieth line of the file',
        new_string: 'line 20: EDITED twentieth line',
      }
      upstream.setScript(
        scriptedClaude([
          { tools: [{ name: 'Read', input: { file_path: file } }] },
          { tools: [{ name: 'Read', input: { file_path: file } }] },
          { tools: [{ name: 'Edit', input: edit }] },
          { tools: [{ name: 'Bash', input: { command: 'ls', description: 'List files' } }] },
          { tools: [{ name: 'Bash', input: { command: 'ls', description: 'List files' } }] },
          { text: 'Done.' },
        ]),
      )
      const client = new Client(proxy.url, false)
      await client.ask('edit line 20')
      await client.answer({ Read: read })
      await client.answer({ Read: read.replace(REMINDER, reminder(14999700)) })
      await client.answer({ Edit: edited })
      await client.answer({ Bash: 'notes.txt\nother.txt' + reminder(14999500) })
      const done = await client.answer({ Bash: 'notes.txt\nother.txt' + reminder(14999300) })
      assert.equal(done.content[0].text, 'Done.')
      assert.deepEqual(historyChanges(upstream), [])
      const results = upstreamMessages(upstream)
        .at(-1)
        .messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
        .filter((b: any) => b.type === 'tool_result')
        .map((b: any) => b.content)
      assert.match(results[0], new RegExp(`^\\[#0001 ${file} lines 1-40\\]\\n1\\t`))
      assert.ok(results[0].endsWith('\n41' + REMINDER), 'the read keeps its reminder')
      // The re-read's own reminder (fewer tokens left) stops no stub, and stays after it.
      assert.equal(
        results[1],
        `[#0002 ${file} lines 1-40] Unchanged since #0001, which already shows lines 1-40.` +
          reminder(14999700),
      )
      // The second `ls`: "Same result as", though its reminder differs, with that reminder kept.
      assert.equal(results[3], '[#0004]\nnotes.txt\nother.txt' + reminder(14999500))
      assert.equal(results[4], '[#0005] Same result as #0004.' + reminder(14999300))
      assert.match(results[2], /^\[#0003 /)
      assert.match(
        results[2],
        /-line 20: the twentieth line of the file\n\+line 20: EDITED twentieth line/,
      )
      // The CLI's reminders stay after the diff.
      assert.match(
        results[2],
        /\n<system-reminder>\n<total_tokens>\d+ tokens left<\/total_tokens>\n<\/system-reminder>$/,
      )
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})
