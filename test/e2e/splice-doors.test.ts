/**
 * The fast path on the Messages and Responses doors: the same sessions through a proxy with it
 * and one without must send the upstream exactly the same bytes, and every request after the
 * first goes on from the last one — Claude Code's moving cache breakpoint included.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createLogger } from '../../src/log.js'
import type { Recorder } from '../../src/pipeline/handle.js'
import { createStats } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { assembleMessage, anthropicSse, scriptedClaude } from '../helpers/fake-anthropic.js'
import { responsesEventsOf, scriptedResponses } from '../helpers/fake-responses.js'
import {
  startFakeUpstream,
  type FakeScript,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import { prefixViolations } from '../helpers/model.js'
import { startProxy } from '../helpers/proxy.js'

const DAY = 86_400_000
const FILE = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n'
const OUTPUTS: Record<string, string> = {
  'cat a.txt': FILE,
  ls: 'a.txt\nb.txt\n',
  'seq 1 500': Array.from({ length: 500 }, (_, i) => String(i + 1)).join('\n'),
}

/** One plan for both doors: reads, a repeated listing, recalls alone and beside a call. */
const PLAN = [
  { bash: ['cat a.txt'] },
  { bash: ['ls'] },
  { bash: ['ls'] },
  { text: 'Looking.', recall: { id: '#0001', offset: 1, limit: 2 } },
  { bash: ['seq 1 500'] },
  { recall: { id: '#0002' }, bash: ['cat a.txt'] },
  { text: 'done' },
  { text: 'ok' },
] as const

type Step = (typeof PLAN)[number]

function claudeScript(): FakeScript {
  return scriptedClaude(
    PLAN.map((step: Step) => ({
      ...('text' in step ? { text: step.text } : {}),
      tools: [
        ...('recall' in step ? [{ name: 'recall', input: { ...step.recall } }] : []),
        ...('bash' in step
          ? step.bash.map((command) => ({ name: 'Bash', input: { command } }))
          : []),
      ],
    })),
  )
}

function codexScript(): FakeScript {
  return scriptedResponses(
    PLAN.map((step: Step) =>
      'bash' in step || 'recall' in step
        ? {
            calls: [
              ...('recall' in step ? [{ name: 'recall', args: { ...step.recall } }] : []),
              ...('bash' in step
                ? step.bash.map((cmd) => ({
                    name: 'shell',
                    args: { command: ['bash', '-lc', cmd] },
                  }))
                : []),
            ],
          }
        : { text: step.text },
    ),
  )
}

/** Claude Code as it sends requests: its breakpoint on the last block of the last message. */
function withBreakpoint(messages: any[]): any[] {
  return messages.map((message, i) => {
    if (i !== messages.length - 1) return message
    const content =
      typeof message.content === 'string'
        ? [{ type: 'text', text: message.content }]
        : [...message.content]
    content[content.length - 1] = {
      ...content[content.length - 1],
      cache_control: { type: 'ephemeral' },
    }
    return { ...message, content }
  })
}

async function claudeSession(url: string, stream: boolean): Promise<void> {
  const messages: any[] = []
  for (const question of ['work', 'again']) {
    messages.push({ role: 'user', content: [{ type: 'text', text: question }] })
    for (let turn = 0; turn < 10; turn++) {
      const response = await fetch(url + '/v1/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-splice' },
        body: JSON.stringify({
          model: 'claude-test',
          max_tokens: 1024,
          stream,
          system: [
            { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
          ],
          tools: [
            { name: 'Bash', description: 'Runs a command', input_schema: { type: 'object' } },
          ],
          metadata: { user_id: 'user_abc_account__session_5b0c7e1e-0000-4000-8000-000000000001' },
          messages: withBreakpoint(messages),
        }),
      })
      const text = await response.text()
      assert.equal(response.status, 200, text)
      const answer = stream ? assembleMessage(anthropicSse(text)) : JSON.parse(text)
      messages.push({ role: 'assistant', content: answer.content })
      const uses = answer.content.filter((b: any) => b.type === 'tool_use')
      assert.ok(!uses.some((b: any) => b.name === 'recall'), 'the client never sees recall')
      if (uses.length === 0) break
      messages.push({
        role: 'user',
        content: uses.map((b: any) => ({
          type: 'tool_result',
          tool_use_id: b.id,
          content: OUTPUTS[b.input.command] ?? '',
        })),
      })
    }
  }
}

async function codexSession(url: string, stream: boolean): Promise<void> {
  const input: any[] = []
  for (const question of ['work', 'again']) {
    input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: question }] })
    for (let turn = 0; turn < 10; turn++) {
      const response = await fetch(url + '/v1/responses', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer codex-splice' },
        body: JSON.stringify({
          model: 'gpt-test',
          instructions: 'You are Codex.',
          tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' } }],
          input,
          stream,
          prompt_cache_key: 'codex-splice-session',
        }),
      })
      const text = await response.text()
      assert.equal(response.status, 200, text)
      const output = stream
        ? responsesEventsOf(text).find((e: any) => e.type === 'response.completed').response.output
        : JSON.parse(text).output
      input.push(...output)
      const calls = output.filter((item: any) => item.type === 'function_call')
      assert.ok(!calls.some((c: any) => c.name === 'recall'), 'the client never sees recall')
      if (calls.length === 0) break
      for (const call of calls)
        input.push({
          type: 'function_call_output',
          call_id: call.call_id,
          output: OUTPUTS[JSON.parse(call.arguments).command[2]] ?? '',
        })
    }
  }
}

function withoutBreakpoints(requests: readonly RecordedRequest[]): RecordedRequest[] {
  const strip = (key: string, value: unknown) => (key === 'cache_control' ? undefined : value)
  return requests.map((request) => {
    const json = JSON.parse(request.body, strip)
    return { ...request, json, body: JSON.stringify(json) }
  })
}

const DOORS = [
  {
    name: 'messages',
    path: '/messages',
    field: 'messages',
    script: claudeScript,
    session: claudeSession,
  },
  {
    name: 'responses',
    path: '/responses',
    field: 'input',
    script: codexScript,
    session: codexSession,
  },
] as const

async function run(door: (typeof DOORS)[number], stream: boolean, spliceChars?: number) {
  const upstream = await startFakeUpstream(door.script())
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const lines: string[] = []
  const stats = createStats()
  const recorded: Parameters<Recorder['record']>[0][] = []
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store,
    stats,
    recorder: { record: (entry) => recorded.push(entry) },
    log: createLogger('info', (line) => lines.push(line)),
    ...(spliceChars === undefined ? {} : { spliceChars }),
  })
  try {
    await door.session(proxy.url, stream)
    const events = lines.map((line) => JSON.parse(line))
    const requests = events.filter((e) => e.event === 'request')
    // Every door has the log line, /stats, /metrics and --record of the chat door.
    assert.ok(
      requests.every((e) => e.door === door.name && e.status === 200),
      'door and status',
    )
    assert.equal(stats.snapshot().totals.requests, requests.length)
    assert.equal(stats.snapshot().totals.recalls, 2)
    assert.equal(stats.snapshot().totals.newResults, 5, 'cat, ls, ls, seq, cat')
    const metrics = await stats.metrics()
    assert.ok(metrics.includes(`door="${door.name}"`), 'requests counted by door')
    assert.equal(recorded.length, requests.length)
    assert.ok(recorded.every((entry) => entry.door === door.name && entry.session !== undefined))
    return {
      bodies: upstream.requests.map((r) => r.body),
      spliced: events.filter((e) => e.event === 'request').map((e) => e.spliced),
      recalls: events.filter((e) => e.event === 'recall-answered').length,
      // The client's own breakpoint moves are not the proxy's: compared without them.
      violations: prefixViolations(withoutBreakpoints(upstream.requests), {
        path: door.path,
        field: door.field,
      }),
      requests: upstream.requests,
    }
  } finally {
    await proxy.close()
    await upstream.close()
    await store.close()
  }
}

for (const door of DOORS)
  for (const stream of [false, true]) {
    test(`${door.name}: the fast path sends the same bytes as the full path (${stream ? 'streaming' : 'whole'})`, async () => {
      const fast = await run(door, stream)
      const full = await run(door, stream, 0)
      assert.equal(fast.recalls, 2, 'both recalls answered by the proxy')
      assert.deepEqual(fast.violations, [], 'every upstream request extends the one before')
      assert.deepEqual(
        full.spliced.filter((s) => s === 1),
        [],
        'the full path never splices',
      )
      assert.ok(
        fast.spliced.slice(1).every((s) => s === 1),
        `every request after the first goes on from the last: ${fast.spliced}`,
      )
      assert.equal(fast.bodies.length, full.bodies.length)
      fast.bodies.forEach((body, i) =>
        assert.equal(body, full.bodies[i], `upstream request ${i + 1}`),
      )
      if (door.name === 'messages') {
        // The recall answered beside Bash: one user turn, the recall's result first.
        const last = fast.requests.at(-1)!.json.messages as any[]
        const users = last.filter((m, i) => m.role === 'user' && last[i - 1]?.role === 'user')
        assert.deepEqual(users, [], 'no two user turns in a row')
        const joined = last.find(
          (m) =>
            Array.isArray(m.content) &&
            m.content.length === 2 &&
            m.content.every((b: any) => b.type === 'tool_result'),
        )
        assert.ok(joined, 'the recall result and the Bash result share a user turn')
        assert.match(joined.content[0].content, /^\[#\d{4} recall #0002/)
      }
    })
  }
