import assert from 'node:assert/strict'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createStore } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import {
  inputPrefixViolations,
  responsesEventsOf,
  responsesRequests,
  scriptedResponses,
} from '../helpers/fake-responses.js'
import { defaultElide, loop, promptBlock, startProxy, type TestProxy } from '../helpers/proxy.js'
import { makeProject } from '../helpers/workspace.js'

const DAY = 86_400_000

const tools = [
  {
    type: 'function',
    name: 'shell',
    description: 'Runs a command',
    parameters: {
      type: 'object',
      properties: { command: { type: 'array', items: { type: 'string' } } },
      required: ['command'],
    },
  },
  { type: 'custom', name: 'apply_patch', description: 'Applies a patch' },
]

function userMessage(text: string) {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] }
}

/** A session that ran `seq` once (its key as `prompt_cache_key`): the request's fields and input. */
function shellTurn(key: string, stream: boolean, lines: number) {
  const base = { model: 'm', instructions: 'Be brief.', tools, stream, prompt_cache_key: key }
  const input: any[] = [
    userMessage('run it'),
    { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{"command":["seq"]}' },
    { type: 'function_call_output', call_id: 'c1', output: shellOutput(lines) },
  ]
  return { base, input }
}

function shellOutput(lines: number): string {
  const body = Array.from({ length: lines }, (_, i) => `line ${i + 1}`).join('\n')
  return `Exit code: 0\nWall time: 0.1 seconds\nOutput:\n${body}`
}

async function postResponses(
  proxyUrl: string,
  body: unknown,
): Promise<{ status: number; text: string; json: any }> {
  const response = await fetch(proxyUrl + '/v1/responses', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer test-key' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
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

/** The client's view of a finished answer: the output items (from the JSON or the stream). */
function outputOf(result: { text: string; json: any }, stream: boolean): any[] {
  if (!stream) return result.json.output
  const events = responsesEventsOf(result.text)
  const completed = events.filter((e) => e.type === 'response.completed')
  assert.equal(completed.length, 1, 'one response.completed')
  return completed[0].response.output
}

for (const stream of [false, true]) {
  describe(`POST /v1/responses (${stream ? 'streaming' : 'non-streaming'})`, () => {
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

    test('an output of parts (input_text, input_image) is shaped in its first text part, the image kept', async () => {
      upstream.requests.length = 0
      upstream.setScript(scriptedResponses([{ text: 'Seen.' }]))
      const image = { type: 'input_image', image_url: 'data:image/png;base64,AAAA' }
      const input = [
        userMessage('show me'),
        {
          type: 'function_call',
          call_id: 'p1',
          name: 'shell',
          arguments: '{"command":["seq","1000"]}',
        },
        {
          type: 'function_call_output',
          call_id: 'p1',
          output: [{ type: 'input_text', text: shellOutput(1000) }, image],
        },
      ]
      const base = { model: 'gpt-5-codex', instructions: 'You are Codex.', tools, stream }
      const result = await postResponses(proxy.url, {
        ...base,
        input,
        prompt_cache_key: `parts-${stream}`,
      })
      assert.equal(result.status, 200, result.text)
      const [sent] = responsesRequests(upstream.requests)
      const output = sent.input.find((item: any) => item.type === 'function_call_output').output
      assert.equal(output.length, 2)
      assert.equal(output[0].type, 'input_text')
      assert.match(output[0].text, /^\[#0001\]\nExit code: 0\n/)
      assert.match(output[0].text, /\n\[\d+ lines elided, full output #0001\]\n/)
      assert.deepEqual(output[1], image)
    })

    test('tool outputs shaped, earlier items byte-identical, recall offered', async () => {
      const base = {
        model: 'gpt-5-codex',
        instructions: 'You are Codex.',
        tools,
        stream,
        store: false,
        prompt_cache_key: `codex-${stream}`,
      }
      await countingSession(base, [userMessage('count to 1000')])
      const sent = responsesRequests(upstream.requests)
      assert.equal(sent.length, 3)
      assert.deepEqual(inputPrefixViolations(upstream.requests), [])
      for (const request of sent) {
        assert.ok(request.instructions.endsWith(promptBlock), 'the block ends the instructions')
        assert.ok(request.instructions.startsWith('You are Codex.'))
        assert.ok(
          request.tools.some(
            (t: any) =>
              t.type === 'function' && t.name === 'recall' && t.parameters && t.strict === false,
          ),
          'recall in the Responses tool shape',
        )
      }
      const outputs = sent[2].input.filter((i: any) => i.type === 'function_call_output')
      assert.match(outputs[0].output, /^\[#0001\]/)
      assert.match(outputs[0].output, /lines elided, full output #0001\]/)
      assert.ok(outputs[0].output.length < shellOutput(1000).length)
      assert.match(outputs[1].output, /^\[#0002\]/)
      // Items other than tool outputs are as the client sent them.
      assert.deepEqual(sent[2].input[0], userMessage('count to 1000'))
    })

    // Codex sends its prompt as a developer message; the AI SDK as a system one for a model it
    // does not know to reason.
    for (const role of ['developer', 'system'])
      test(`without instructions, a ${role} message first: the block is a ${role} message after it`, async () => {
        const prompt = {
          type: 'message',
          id: 'msg_prompt',
          role,
          content: [
            { type: 'input_text', text: 'You are a coding agent running in the Codex CLI.' },
          ],
        }
        const base = { model: 'gpt-5-codex', tools, stream, prompt_cache_key: `${role}-${stream}` }
        await countingSession(base, [prompt, userMessage('count to 1000')])
        const sent = responsesRequests(upstream.requests)
        assert.equal(sent.length, 3)
        assert.deepEqual(inputPrefixViolations(upstream.requests), [])
        for (const request of sent) {
          assert.equal('instructions' in request, false, 'no instructions field is made')
          assert.deepEqual(request.input[0], prompt, "the client's prompt as it sent it")
          assert.deepEqual(request.input[1], {
            type: 'message',
            role,
            content: [{ type: 'input_text', text: promptBlock }],
          })
          assert.deepEqual(request.input[2], userMessage('count to 1000'))
          assert.ok(request.tools.some((t: any) => t.name === 'recall'))
        }
        assert.match(sent.at(-1).input.at(-1).output, /^\[#0002\]/)
      })

    /** Three turns of a scripted model: `seq 1000`, `echo hi`, then text; upstream emptied first. */
    async function countingSession(base: object, opening: any[]): Promise<void> {
      upstream.requests.length = 0
      upstream.setScript(
        scriptedResponses([
          { calls: [{ name: 'shell', args: { command: ['bash', '-lc', 'seq 1000'] } }] },
          { calls: [{ name: 'shell', args: { command: ['bash', '-lc', 'echo hi'] } }] },
          { text: 'All done.' },
        ]),
      )
      let input = opening
      for (let turn = 0; turn < 3; turn++) {
        const result = await postResponses(proxy.url, { ...base, input })
        assert.equal(result.status, 200, result.text)
        const output = outputOf(result, stream)
        input = [...input, ...output]
        const call = output.find((item) => item.type === 'function_call')
        if (call)
          input.push({
            type: 'function_call_output',
            call_id: call.call_id,
            output: turn === 0 ? shellOutput(1000) : shellOutput(1),
          })
      }
    }

    test('custom tool calls (apply_patch) get an id in their output', async () => {
      upstream.requests.length = 0
      upstream.setScript(scriptedResponses([{ text: 'Patched.' }]))
      const input = [
        userMessage('add a file'),
        {
          type: 'custom_tool_call',
          call_id: `patch-${stream}`,
          name: 'apply_patch',
          input: '*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch\n',
        },
        {
          type: 'custom_tool_call_output',
          call_id: `patch-${stream}`,
          output: 'Success. Updated the following files:\nA notes.txt\n',
        },
      ]
      const result = await postResponses(proxy.url, {
        model: 'm',
        tools,
        input,
        stream,
        prompt_cache_key: `patch-${stream}`,
      })
      assert.equal(result.status, 200, result.text)
      const [sent] = responsesRequests(upstream.requests)
      assert.equal(sent.instructions, undefined, 'no instructions where the client sent none')
      assert.deepEqual(
        sent.input[0],
        {
          type: 'message',
          role: 'developer',
          content: [{ type: 'input_text', text: promptBlock }],
        },
        'the block opens the input as a developer message',
      )
      assert.match(sent.input[3].output, /^\[#0001/)
      assert.deepEqual(sent.input[2], input[1])
    })

    test('recall is answered by the proxy and restored in the next request', async () => {
      upstream.requests.length = 0
      upstream.setScript(
        scriptedResponses([
          { calls: [{ name: 'recall', args: { id: '#0001', offset: 500, limit: 3 } }] },
          (request) => {
            const answer = request.json.input.at(-1)
            assert.equal(answer.type, 'function_call_output')
            assert.match(answer.output, /^\[#0002 recall #0001 lines 500-502/)
            return { text: 'Line 500 says line 500.' }
          },
          { text: 'Bye.' },
        ]),
      )
      const { base, input: asked } = shellTurn(`recall-${stream}`, stream, 1000)
      let input: any[] = asked
      const first = await postResponses(proxy.url, { ...base, input })
      assert.equal(first.status, 200, first.text)
      assert.ok(
        !first.text.includes('recall'),
        'the client never sees the recall call: ' + first.text,
      )
      const output = outputOf(first, stream)
      assert.equal(output.length, 1)
      assert.equal(output[0].type, 'message')
      if (stream) {
        const events = responsesEventsOf(first.text)
        assert.equal(events.filter((e) => e.type === 'response.created').length, 1)
        const numbers = events.map((e) => e.sequence_number)
        assert.deepEqual(
          numbers,
          numbers.map((_, i) => i),
        )
        for (const e of events) if ('output_index' in e) assert.equal(e.output_index, 0)
        const text = events
          .filter((e) => e.type === 'response.output_text.delta')
          .map((e) => e.delta)
          .join('')
        assert.equal(text, 'Line 500 says line 500.')
        assert.equal(events.at(-1).response.usage.input_tokens, 100, 'the last round’s input')
      } else {
        assert.equal(first.json.usage.input_tokens, 100, 'the last round’s input')
      }

      input = [...input, ...output, userMessage('thanks')]
      const second = await postResponses(proxy.url, { ...base, input })
      assert.equal(second.status, 200, second.text)
      const sent = responsesRequests(upstream.requests)
      assert.equal(sent.length, 3)
      assert.deepEqual(inputPrefixViolations(upstream.requests), [])
      const types = sent[2].input.map((i: any) => i.type + (i.name ? ':' + i.name : ''))
      assert.deepEqual(types, [
        'message',
        'function_call:shell',
        'function_call_output',
        'function_call:recall',
        'function_call_output',
        'message',
        'message',
      ])
    })

    // How clients send a model's output back: Codex as it came; the AI SDK (opencode, Kilo with
    // the \`openai\` provider) without ids when it does not store (\`store: false\`, its default),
    // and by reference to the ids the upstream stored otherwise (calls whole).
    const sendBack = {
      'as it came (Codex)': (item: any) => item,
      'without ids (the AI SDK, store false)': ({ id: _id, ...rest }: any) => rest,
      'by reference (the AI SDK, store true)': (item: any) =>
        item.type === 'function_call' ? item : { type: 'item_reference', id: item.id },
    }
    for (const [client, back] of Object.entries(sendBack)) {
      const stored = client.includes('store true')
      test(`a recall round sends the model's reasoning back with its call, and goes back upstream after it: the client sends its output ${client}`, async () => {
        upstream.requests.length = 0
        const encrypted = (text: string) => (stored ? {} : { encrypted: text })
        const thought = { summary: 'Need line 9.', ...encrypted('gAAAA-first-opaque') }
        const after = { summary: 'Found it.', ...encrypted('gAAAA-second-opaque') }
        upstream.setScript(
          scriptedResponses([
            {
              reasoning: thought,
              calls: [{ name: 'recall', args: { id: '#0001', offset: 9, limit: 1 } }],
            },
            { reasoning: after, text: 'Line 9 says line 9.' },
            { text: 'Bye.' },
          ]),
        )
        const { base, input: asked } = shellTurn(`reasoning-${stream}-${client}`, stream, 1000)
        let input: any[] = asked
        const first = await postResponses(proxy.url, { ...base, input })
        assert.equal(first.status, 200, first.text)
        const sent = responsesRequests(upstream.requests)
        // A function call sent back without the reasoning item before it is refused by the API.
        const round = sent[1].input.slice(-3)
        assert.deepEqual(
          round.map((i: any) => i.type),
          ['reasoning', 'function_call', 'function_call_output'],
        )
        assert.equal(round[0].encrypted_content, thought.encrypted)
        const output = outputOf(first, stream)
        assert.deepEqual(
          output.map((i: any) => i.type),
          ['reasoning', 'reasoning', 'message'],
          "the client gets each round's reasoning to send back",
        )
        assert.deepEqual(
          output.filter((i: any) => i.type === 'reasoning').map((i: any) => i.encrypted_content),
          [thought.encrypted, after.encrypted],
        )
        input = [...input, ...output.map(back), userMessage('thanks')]
        const second = await postResponses(proxy.url, { ...base, input })
        assert.equal(second.status, 200, second.text)
        // The recall round as the upstream had it, byte for byte (in place of the references
        // too): the cache holds, and the model still has what it recalled.
        assert.deepEqual(inputPrefixViolations(upstream.requests), [])
        const types = responsesRequests(upstream.requests)[2].input.map((i: any) => i.type)
        assert.deepEqual(types.slice(3), [
          'reasoning',
          'function_call',
          'function_call_output',
          'reasoning',
          'message',
          'message',
        ])
      })
    }

    if (stream)
      test("a round's reasoning left without its call (the round after it failed) goes upstream as nothing", async () => {
        upstream.requests.length = 0
        const thought = { summary: 'Need line 9.', encrypted: 'gAAAA-orphan' }
        const model = scriptedResponses([
          { reasoning: thought, calls: [{ name: 'recall', args: { id: '#0001', offset: 9 } }] },
          { reasoning: { summary: 'Go on.', encrypted: 'gAAAA-kept' }, text: 'Going on.' },
          { text: 'Bye.' },
        ])
        // The round after the recall is refused (nothing the proxy asks again): the client has
        // the recall round's reasoning, streamed as it came, and the error after it.
        upstream.setScript((request, index) =>
          index === 1
            ? {
                status: 400,
                body: JSON.stringify({ error: { message: 'bad round' } }),
                headers: { 'content-type': 'application/json' },
              }
            : model(request, index),
        )
        const { base, input: asked } = shellTurn('orphan', stream, 100)
        const failed = await postResponses(proxy.url, { ...base, input: asked })
        const kept = responsesEventsOf(failed.text)
          .filter((e) => e.type === 'response.output_item.done')
          .map((e) => e.item)
        assert.deepEqual(
          kept.map((i: any) => i.type),
          ['reasoning'],
          failed.text,
        )
        assert.match(failed.text, /response\.failed/)
        // Codex keeps it, and goes on: its next request carries it before the user's words.
        let input = [...asked, ...kept, userMessage('go on')]
        const second = await postResponses(proxy.url, { ...base, input })
        assert.equal(second.status, 200, second.text)
        const sent = responsesRequests(upstream.requests)
        const types = (json: any) => json.input.map((i: any) => i.type)
        assert.deepEqual(types(sent[2]), [
          'message',
          'function_call',
          'function_call_output',
          'message',
        ])
        // A reasoning item that precedes the model's own item stays, and the bytes go on.
        input = [...input, ...outputOf(second, stream), userMessage('thanks')]
        const third = await postResponses(proxy.url, { ...base, input })
        assert.equal(third.status, 200, third.text)
        const last = responsesRequests(upstream.requests)[3]
        assert.deepEqual(types(last).slice(3), ['message', 'reasoning', 'message', 'message'])
        assert.deepEqual(inputPrefixViolations(upstream.requests.slice(2)), [])
      })

    test('a model that keeps calling recall gets an answer that says so, not an empty turn', async () => {
      upstream.requests.length = 0
      const forever = { calls: [{ name: 'recall', args: { id: '#0001' } }] }
      upstream.setScript(scriptedResponses([...Array(5).fill(forever), { text: 'Going on.' }]))
      const { base, input: asked } = shellTurn(`limit-${stream}`, stream, 10)
      let input: any[] = asked
      const first = await postResponses(proxy.url, { ...base, input })
      assert.equal(first.status, 200, first.text)
      const output = outputOf(first, stream)
      assert.deepEqual(
        output.map((item: any) => item.content?.[0]?.text),
        [loop.proxy.recall.limit_answer],
      )
      if (stream) {
        const events = responsesEventsOf(first.text)
        const numbers = events.map((e) => e.sequence_number)
        assert.deepEqual(
          numbers,
          numbers.map((_, i) => i),
        )
        const done = events.filter((e) => e.type === 'response.output_item.done')
        assert.deepEqual(
          done.map((e) => [e.output_index, e.item.type]),
          [[0, 'message']],
        )
        const text = events.filter((e) => e.type === 'response.output_text.delta')
        assert.equal(text.map((e) => e.delta).join(''), loop.proxy.recall.limit_answer)
      }
      input = [...input, ...output, userMessage('go on')]
      const second = await postResponses(proxy.url, { ...base, input })
      assert.equal(second.status, 200, second.text)
      const sent = JSON.stringify(responsesRequests(upstream.requests).at(-1).input)
      assert.ok(!sent.includes(loop.proxy.recall.limit_answer), 'the model sees its own exchange')
      assert.equal(sent.split('"name":"recall"').length - 1, 5)
      assert.deepEqual(inputPrefixViolations(upstream.requests), [])
    })

    test('errors come in the OpenAI shape', async () => {
      const bad = await postResponses(proxy.url, '{not json')
      assert.equal(bad.status, 400)
      assert.equal(bad.json.error.code, 'invalid_request')
      const wrong = await postResponses(proxy.url, { model: 'm', tools, input: 42, stream })
      assert.equal(wrong.status, 400)
      assert.equal(wrong.json.error.type, 'invalid_request_error')
      upstream.setScript(() => ({
        status: 401,
        body: JSON.stringify({ error: { message: 'bad key', type: 'invalid_request_error' } }),
      }))
      const denied = await postResponses(proxy.url, {
        model: 'm',
        tools,
        input: [userMessage('hi')],
        stream,
      })
      assert.equal(denied.status, 401)
      assert.equal(denied.json.error.message, 'bad key')
    })
  })
}

describe('--elide-inputs through /v1/responses', () => {
  test("a custom tool call's patch and a function call's script go as stand-ins, the same bytes after", async () => {
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      elide: defaultElide('--elide-inputs'),
    })
    try {
      upstream.setScript(scriptedResponses([{ text: 'Next.' }, { text: 'Done.' }]))
      const added = Array.from({ length: 300 }, (_, i) => `+generated line ${i}`).join('\n')
      const patch = `*** Begin Patch\n*** Add File: notes.txt\n${added}\n*** End Patch\n`
      const script = Array.from({ length: 100 }, (_, i) => `echo step ${i}`).join('\n')
      const call = (n: number, command: string) => [
        {
          type: 'function_call',
          call_id: `sh-${n}`,
          name: 'shell',
          arguments: JSON.stringify({ command: ['bash', '-lc', command] }),
        },
        { type: 'function_call_output', call_id: `sh-${n}`, output: shellOutput(2) },
      ]
      const input: any[] = [
        userMessage('write notes'),
        { type: 'custom_tool_call', call_id: 'patch-1', name: 'apply_patch', input: patch },
        { type: 'custom_tool_call_output', call_id: 'patch-1', output: 'Success.\nA notes.txt\n' },
        ...call(2, script),
        ...call(3, 'ls'),
      ]
      const body = {
        model: 'm',
        instructions: 'Be brief.',
        tools,
        prompt_cache_key: 'elide-inputs',
      }
      for (const turn of [input, [...input, ...call(4, 'pwd')]]) {
        const result = await postResponses(proxy.url, { ...body, input: turn })
        assert.equal(result.status, 200, result.text)
      }
      const [first, second] = responsesRequests(upstream.requests)
      // The patch is the custom call's input: its stand-in is a string there too.
      assert.deepEqual(first.input[1], {
        ...input[1],
        input: '[#0001] Elided; recall shows it.',
      })
      // A string inside the arguments' array; the short ones stay, as does a short command.
      assert.deepEqual(JSON.parse(first.input[3].arguments), {
        command: ['bash', '-lc', '[#0002] Elided; recall shows it.'],
      })
      assert.equal(first.input[5].arguments, input[5].arguments)
      // The outputs themselves were too short for a stand-in: numbered only.
      assert.match(first.input[2].output, /^\[#0001/)
      assert.deepEqual(second.input.slice(0, first.input.length), first.input)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

describe("Codex's exec_command output through /v1/responses", () => {
  let upstream: FakeUpstream
  let proxy: TestProxy
  let project: string
  before(async () => {
    upstream = await startFakeUpstream()
    project = makeProject()
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      workspace: await createWorkspace([project]),
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
    rmSync(project, { recursive: true, force: true })
  })

  test('a `cat` inside the Chunk ID envelope is read like a file read, and repeated as a stub', async () => {
    upstream.setScript(scriptedResponses([{ text: 'Read it.' }, { text: 'Again.' }]))
    const content = readFileSync(join(project, 'app.ts'), 'utf8')
    const envelope = `Chunk ID: 1a2b3c\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 4000\nOutput:\n${content}`
    const read = (id: string) => [
      {
        type: 'function_call',
        call_id: id,
        name: 'exec_command',
        arguments: JSON.stringify({ cmd: `cat ${join(project, 'app.ts')}` }),
      },
      { type: 'function_call_output', call_id: id, output: envelope },
    ]
    const base = { model: 'm', tools, prompt_cache_key: 'exec-command' }
    const input = [userMessage('read app.ts'), ...read('e1')]
    assert.equal((await postResponses(proxy.url, { ...base, input })).status, 200)
    const again = [...input, userMessage('once more'), ...read('e2')]
    assert.equal((await postResponses(proxy.url, { ...base, input: again })).status, 200)
    const sent = responsesRequests(upstream.requests)
    const outputs = sent[1].input.filter((i: any) => i.type === 'function_call_output')
    assert.match(outputs[0].output, /^\[#0001 \S*app\.ts lines 1-340 of 340 sha [0-9a-f]{8}\]/)
    assert.match(outputs[1].output, /^\[#0002 \S*app\.ts .*\] Unchanged since #0001/)
    assert.deepEqual(inputPrefixViolations(upstream.requests), [])
  })

  test("Codex's compaction summary gets the table of files read before it", async () => {
    upstream.requests.length = 0
    upstream.setScript(scriptedResponses([{ text: 'Read it.' }, { text: 'Going on.' }]))
    const content = readFileSync(join(project, 'util.ts'), 'utf8')
    const envelope = `Chunk ID: 9z\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 40\nOutput:\n${content}`
    const base = {
      model: 'm',
      instructions: 'Be brief.',
      tools,
      prompt_cache_key: 'codex-compaction',
    }
    const input = [
      userMessage('read util.ts'),
      {
        type: 'function_call',
        call_id: 'u1',
        name: 'exec_command',
        arguments: JSON.stringify({ cmd: `cat ${join(project, 'util.ts')}` }),
      },
      { type: 'function_call_output', call_id: 'u1', output: envelope },
    ]
    assert.equal((await postResponses(proxy.url, { ...base, input })).status, 200)
    const summary = userMessage(
      'Another language model started to solve this problem and produced a summary of its thinking process. Here is the summary: util.ts was read.',
    )
    assert.equal((await postResponses(proxy.url, { ...base, input: [summary] })).status, 200)
    const sent = responsesRequests(upstream.requests)[1].input[0]
    assert.equal(sent.content.length, 2)
    assert.match(
      sent.content[1].text,
      /^## Files read before this summary\n[\s\S]*\| \S*util\.ts \| 1-3 of 3 \| [0-9a-f]{8} \| #0001 \|\n$/,
    )
  })
})

test('a reasoning item that ends a request (a retry after a cut answer) goes upstream alike from every process', async () => {
  const upstream = await startFakeUpstream(
    scriptedResponses([{ text: 'One.' }, { text: 'Two.' }, { text: 'Three.' }, { text: 'Four.' }]),
  )
  const store = await createStore('memory:', { idleTtlMs: DAY })
  // The process that served the session, and another one on its store (no fast path there).
  const served = await startProxy({ upstreamUrl: upstream.url, store })
  const other = await startProxy({ upstreamUrl: upstream.url, store, spliceChars: 0 })
  try {
    const thought = (n: number) => ({
      type: 'reasoning',
      id: `rs_${n}`,
      summary: [{ type: 'summary_text', text: `Step ${n}.` }],
      encrypted_content: `gAAAA-${n}`,
    })
    const call = { type: 'function_call', call_id: 'c3', name: 'shell', arguments: '{}' }
    const base = { model: 'm', instructions: 'Be brief.', tools, prompt_cache_key: 'cut-answer' }
    const post = (url: string, input: unknown[]) => postResponses(url, { ...base, input })
    const asked = [userMessage('go')]
    await post(served.url, asked)
    // The answer was cut after its reasoning: the client sends it back last (Codex does).
    await post(served.url, [...asked, thought(2)])
    const next = [
      ...asked,
      thought(2),
      thought(3),
      call,
      { type: 'function_call_output', call_id: 'c3', output: 'ok' },
    ]
    await post(served.url, next)
    await post(other.url, next)
    const [, , fast, full] = responsesRequests(upstream.requests)
    assert.deepEqual(fast.input, full.input)
    assert.deepEqual(
      fast.input.map((item: any) => item.id ?? item.type),
      ['message', 'rs_3', 'function_call', 'function_call_output'],
      'the reasoning its answer never followed goes as nothing',
    )
  } finally {
    await served.close()
    await other.close()
    await upstream.close()
  }
})
