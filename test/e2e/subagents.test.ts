/**
 * Claude Code's subagents (its Agent tool) send their own conversations under the main one's
 * session id, interleaved with it and with each other. Each conversation keeps its own fast
 * path, and none of them is taken for a break of another's cache.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStats } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { anthropicMessage } from '../helpers/fake-anthropic.js'
import { chatCompletion, startFakeUpstream } from '../helpers/fake-upstream.js'
import { scriptedModel, toolTexts } from '../helpers/model.js'
import { defaultElide, postChat, startProxy } from '../helpers/proxy.js'
import type { ElideSettings } from '../../src/pipeline/elide.js'

const DAY = 86_400_000
const TOOLS = [
  { name: 'Bash', description: 'Runs a command', input_schema: { type: 'object' } },
  { name: 'Agent', description: 'Runs a subagent', input_schema: { type: 'object' } },
]
const SESSION = 'user_abc_account__session_5f0c3a9e-1d2b-4c6a-9e7f-0a1b2c3d4e5f'

/** One conversation of the session: its system prompt, its messages, each turn one result. */
class Conversation {
  readonly messages: object[]
  turns = 0
  constructor(
    readonly system: string,
    task: string,
  ) {
    this.messages = [{ role: 'user', content: task }]
  }

  /** The model ran a command; its output goes back with the next request. */
  ran(output: string): void {
    const id = `toolu_${this.system.replace(/\W/g, '')}_${++this.turns}`
    this.messages.push(
      { role: 'assistant', content: [{ type: 'tool_use', id, name: 'Bash', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: output }] },
    )
  }

  body(): object {
    const system = [{ type: 'text', text: this.system }]
    const metadata = { user_id: SESSION }
    return {
      model: 'claude-test',
      max_tokens: 100,
      system,
      tools: TOOLS,
      metadata,
      messages: this.messages,
    }
  }
}

/** A proxy on a memory store in front of `upstreamUrl`, its stats and its log lines kept. */
async function loggedProxy(
  upstreamUrl: string,
  options: { elide?: ElideSettings; spliceChars?: number } = {},
) {
  const lines: string[] = []
  const stats = createStats()
  const proxy = await startProxy({
    upstreamUrl,
    store: await createStore('memory:', { idleTtlMs: DAY }),
    stats,
    log: createLogger('info', (line) => lines.push(line)),
    ...options,
  })
  return { proxy, stats, lines }
}

/** What a session of a main conversation and two subagents sent upstream, and how. */
interface Run {
  /** Each conversation's upstream `messages`, request by request. */
  readonly sent: readonly (readonly string[])[]
  readonly spliced: readonly number[]
  /** Which conversation each request was (0 the main one), in the order sent. */
  readonly order: readonly number[]
  readonly clientBreaks: number
  readonly proxyBreaks: number
  readonly newResults: number
}

/** The main conversation, then two subagents at once, their turns interleaved with its own. */
async function runSession(
  options: { elide?: ElideSettings; spliceChars?: number },
  turns = 4,
  /** The subagents' requests of a turn sent at once, as Claude Code runs them. */
  together = false,
): Promise<Run> {
  const upstream = await startFakeUpstream(() => ({
    json: anthropicMessage([{ type: 'text', text: 'ok' }]),
  }))
  const { proxy, stats, lines } = await loggedProxy(upstream.url, options)
  try {
    const main = new Conversation('You are Claude Code.', 'Look into the repo.')
    const subagents = [
      new Conversation('You are a search agent. A', 'Find the config.'),
      new Conversation('You are a search agent. B', 'Find the tests.'),
    ]
    const conversations = [main, ...subagents]
    const sent = new Map<Conversation, string[]>(conversations.map((c) => [c, []]))
    const order: number[] = []
    const send = async (conversation: Conversation) => {
      const response = await fetch(proxy.url + '/v1/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test' },
        body: JSON.stringify(conversation.body()),
      })
      assert.equal(response.status, 200, await response.text())
      order.push(conversations.indexOf(conversation))
    }
    const output = (name: string, turn: number) =>
      Array.from({ length: 30 }, (_, i) => `${name} ${turn} line ${i}`).join('\n')
    main.ran(output('main', 0))
    await send(main)
    for (let turn = 1; turn <= turns; turn++) {
      for (const [n, sub] of subagents.entries()) sub.ran(output(`sub${n}`, turn))
      if (together) await Promise.all(subagents.map(send))
      else for (const sub of subagents) await send(sub)
      if (turn % 2 === 0) {
        main.ran(output('main', turn))
        await send(main)
      }
    }
    // Each upstream request to its conversation, by the system prompt it begins with.
    for (const request of upstream.requests) {
      const system: string = request.json.system[0].text
      const conversation = conversations.find((c) => system.startsWith(c.system))!
      sent.get(conversation)!.push(JSON.stringify(request.json.messages))
    }
    const requests = lines.map((line) => JSON.parse(line)).filter((e) => e.event === 'request')
    const { clientBreaks, proxyBreaks, newResults } = stats.snapshot().totals
    return {
      sent: [...sent.values()],
      spliced: requests.map((e) => e.spliced),
      order,
      clientBreaks,
      proxyBreaks,
      newResults,
    }
  } finally {
    await proxy.close()
    await upstream.close()
  }
}

/** Request by request, whether each repeats the one before (else where it first differs). */
function extensions(bodies: readonly string[]): string[] {
  return bodies.slice(1).map((body, i) => {
    const before = bodies[i]!.slice(0, -1)
    if (body.startsWith(before)) return 'extends'
    let at = 0
    while (body[at] === before[at]) at++
    return `differs at ${at}`
  })
}

test('subagents under the main session id: each conversation on its own fast path, no break blamed on the client', async () => {
  const run = await runSession({})
  for (const bodies of run.sent)
    assert.deepEqual(extensions(bodies), Array(bodies.length - 1).fill('extends'))
  assert.equal(run.spliced.length, 11)
  // A conversation's first request is new to the proxy; every later one goes on from its own.
  assert.equal(run.spliced.filter((s) => s === 1).length, 11 - 3, `spliced: ${run.spliced}`)
  assert.equal(run.clientBreaks, 0, 'no conversation broke another one’s cache')
  // One numbering for the session: every id given once.
  const ids = run.sent
    .map((bodies) => bodies.at(-1)!)
    .flatMap((messages) => [...messages.matchAll(/\[#([0-9a-f]{4})\]/g)].map((m) => m[1]))
  assert.equal(new Set(ids).size, ids.length, `ids given once: ${ids}`)
  assert.equal(ids.length, 11)
})

test('--elide with subagents: each batch changes its own conversation only, the same bytes as the full path, on the fast path', async () => {
  const elide = defaultElide('--elide-threshold', '30')
  const fast = await runSession({ elide }, 8)
  const full = await runSession({ elide, spliceChars: 0 }, 8)
  assert.deepEqual(fast.sent, full.sent, 'the fast path sends what the full path does')
  // Each subagent's batches elide its own results; a batch of one conversation never shows in another's.
  for (const bodies of fast.sent) {
    const conversationIds = new Set(
      bodies.flatMap((messages) => [...messages.matchAll(/\[#([0-9a-f]{4})/g)].map((m) => m[1])),
    )
    assert.ok(conversationIds.size > 0)
  }
  const elided = fast.sent.flat().join('').includes('Elided; recall shows it.')
  assert.ok(elided, 'batches were made')
  assert.equal(fast.clientBreaks, 0)
  // A break counted is a batch that changed bytes the conversation had sent: no more, no fewer.
  const changed = fast.sent.flatMap((bodies) => extensions(bodies).filter((e) => e !== 'extends'))
  assert.ok(changed.length >= 6, `batches: ${changed.length}`)
  assert.equal(fast.proxyBreaks, changed.length, 'breaks counted where bytes changed')
  // After a conversation's first request, only a batch that reaches into what the fast path
  // remembered takes the full path; another conversation's batches never send one there.
  const seen = [0, 0, 0]
  const parsedWhole = fast.order.flatMap((conversation, i) => {
    const n = seen[conversation]!++
    if (fast.spliced[i] === 1 || n === 0) return []
    return [extensions(fast.sent[conversation]!)[n - 1]]
  })
  assert.ok(parsedWhole.length < changed.length, `full path: ${parsedWhole}`)
  // A result is new once, whichever path wrote it.
  assert.equal(fast.newResults, 21)
  assert.equal(full.newResults, 21)
  assert.ok(
    parsedWhole.every((e) => e !== 'extends'),
    `full path only for a batch: ${parsedWhole}`,
  )
})

test('--elide with subagents at once: a batch that lost its number to another conversation counts no break', async () => {
  const run = await runSession({ elide: defaultElide('--elide-threshold', '30') }, 8, true)
  for (const bodies of run.sent)
    for (const step of extensions(bodies))
      assert.ok(step === 'extends' || step.startsWith('differs'), step)
  const changed = run.sent.flatMap((bodies) => extensions(bodies).filter((e) => e !== 'extends'))
  assert.ok(changed.length >= 4, `batches: ${changed.length}`)
  assert.equal(run.proxyBreaks, changed.length, 'breaks counted where bytes changed, no more')
  assert.equal(run.clientBreaks, 0)
})

test("opencode's and Kilo's subagents (x-parent-session-id) share their parent's session: one numbering, recall across", async () => {
  const upstream = await startFakeUpstream()
  const lines: string[] = []
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: DAY }),
    log: createLogger('info', (line) => lines.push(line)),
  })
  try {
    const asOpencode = (id: string, parent?: string) => ({
      'x-session-affinity': id,
      'x-session-id': id,
      ...(parent ? { 'x-parent-session-id': parent } : {}),
    })
    const turn = (task: string, outputs: string[]) => ({
      model: 'm',
      tools: [{ type: 'function', function: { name: 'bash' } }],
      messages: [
        { role: 'system', content: `You are ${task}.` },
        { role: 'user', content: task },
        ...outputs.flatMap((output, i) => [
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: `${task}-${i}`, type: 'function', function: { name: 'bash', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: `${task}-${i}`, content: output },
        ]),
      ],
    })
    upstream.setScript(() => ({ json: chatCompletion({ content: 'ok' }) }))
    const main = asOpencode('ses_main')
    const child = asOpencode('ses_child', 'ses_main')
    const send = async (headers: Record<string, string>, body: object) => {
      const reply = await postChat(proxy.url, body, headers)
      assert.equal(reply.status, 200, reply.text)
      return toolTexts(upstream.requests.at(-1)!.json)
    }
    assert.match((await send(main, turn('main', ['one'])))[0]!, /^\[#0001\]/)
    const childTexts = await send(child, turn('child', ['two', 'three']))
    assert.deepEqual(
      childTexts.map((text) => text.slice(0, 7)),
      ['[#0002]', '[#0003]'],
      'the numbering goes on',
    )
    await send(child, turn('child', ['two', 'three', 'four']))
    await send(main, turn('main', ['one', 'five']))
    // The main conversation recalls what its subagent saw.
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'recall', args: { id: '0003' } }] },
        (request) => ({ content: toolTexts(request.json).at(-1)! }),
      ]),
    )
    const recalled = await postChat(proxy.url, turn('main', ['one', 'five', 'six']), main)
    assert.match(
      recalled.json.choices[0].message.content,
      /^\[#\w+ recall #0003 lines 1-1 of 1\]\nthree$/,
    )
    const requests = lines.map((line) => JSON.parse(line)).filter((e) => e.event === 'request')
    assert.deepEqual(
      requests.map((e) => e.spliced),
      [0, 0, 1, 1, 1],
    )
    assert.equal(new Set(requests.map((e) => e.session)).size, 1, 'one session')
  } finally {
    await proxy.close()
    await upstream.close()
  }
})

test("opencode's subagent, first request: the main one's system message and other tools, on the chat and Messages doors: no client break, the main conversation's memory kept", async () => {
  const upstream = await startFakeUpstream((request) =>
    request.pathname.endsWith('/messages')
      ? { json: anthropicMessage([{ type: 'text', text: 'ok' }]) }
      : { json: chatCompletion({ content: 'ok' }) },
  )
  const { proxy, stats, lines } = await loggedProxy(upstream.url)
  const SYSTEM = 'You are opencode, an interactive CLI tool.'
  const mainTools = ['bash', 'read', 'task']
  const subTools = ['bash', 'read']
  try {
    for (const door of ['chat', 'messages'] as const) {
      const headers = (id: string, parent?: string) => ({
        'content-type': 'application/json',
        authorization: 'Bearer k',
        'x-session-affinity': `${door}-${id}`,
        'x-session-id': `${door}-${id}`,
        ...(parent ? { 'x-parent-session-id': `${door}-${parent}` } : {}),
      })
      /** A conversation's body after `turns` commands, with its own task and tools. */
      const body = (task: string, tools: string[], turns: number) => {
        const history = Array.from({ length: turns }, (_, i) =>
          door === 'chat'
            ? [
                {
                  role: 'assistant',
                  content: null,
                  tool_calls: [
                    {
                      id: `${task}-${i}`,
                      type: 'function',
                      function: { name: 'bash', arguments: '{}' },
                    },
                  ],
                },
                { role: 'tool', tool_call_id: `${task}-${i}`, content: `${task} output ${i}` },
              ]
            : [
                {
                  role: 'assistant',
                  content: [{ type: 'tool_use', id: `${task}-${i}`, name: 'bash', input: {} }],
                },
                {
                  role: 'user',
                  content: [
                    {
                      type: 'tool_result',
                      tool_use_id: `${task}-${i}`,
                      content: `${task} output ${i}`,
                    },
                  ],
                },
              ],
        ).flat()
        return door === 'chat'
          ? {
              model: 'm',
              tools: tools.map((name) => ({ type: 'function', function: { name } })),
              messages: [
                { role: 'system', content: SYSTEM },
                { role: 'user', content: task },
                ...history,
              ],
            }
          : {
              model: 'm',
              max_tokens: 100,
              system: [{ type: 'text', text: SYSTEM }],
              tools: tools.map((name) => ({ name, input_schema: { type: 'object' } })),
              messages: [{ role: 'user', content: task }, ...history],
            }
      }
      const path = door === 'chat' ? '/v1/chat/completions' : '/v1/messages'
      const send = async (session: Record<string, string>, payload: object) => {
        const response = await fetch(proxy.url + path, {
          method: 'POST',
          headers: session,
          body: JSON.stringify(payload),
        })
        assert.equal(response.status, 200, await response.text())
      }
      const main = headers('main')
      const child = headers('child', 'main')
      // The model's first action is a task: the subagent's first request right after the main's.
      await send(main, body('Fix the bug.', mainTools, 0))
      await send(child, body('Explore the repo.', subTools, 0))
      await send(child, body('Explore the repo.', subTools, 1))
      for (const turns of [1, 2, 3]) await send(main, body('Fix the bug.', mainTools, turns))
      assert.equal(stats.snapshot().totals.clientBreaks, 0, `${door}: no break of the client's`)
    }
    const spliced = lines
      .map((line) => JSON.parse(line))
      .filter((e) => e.event === 'request')
      .map((e) => e.spliced)
    // Per door: main, subagent, subagent, main ×3. The main conversation goes on from its own
    // memory (its second request on the Messages door parses its few items again).
    assert.deepEqual(spliced.slice(0, 6).slice(3), [1, 1, 1], `chat: ${spliced}`)
    assert.deepEqual(spliced.slice(6).slice(4), [1, 1], `messages: ${spliced}`)
  } finally {
    await proxy.close()
    await upstream.close()
  }
})
