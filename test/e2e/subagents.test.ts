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
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { startProxy } from '../helpers/proxy.js'

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

test('subagents under the main session id: each conversation on its own fast path, no break blamed on the client', async () => {
  const upstream = await startFakeUpstream(() => ({
    json: anthropicMessage([{ type: 'text', text: 'ok' }]),
  }))
  const lines: string[] = []
  const stats = createStats()
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: DAY }),
    stats,
    log: createLogger('info', (line) => lines.push(line)),
  })
  try {
    const main = new Conversation('You are Claude Code.', 'Look into the repo.')
    const subagents = [
      new Conversation('You are a search agent. A', 'Find the config.'),
      new Conversation('You are a search agent. B', 'Find the tests.'),
    ]
    const sent = new Map<Conversation, string[]>()
    const send = async (conversation: Conversation) => {
      const response = await fetch(proxy.url + '/v1/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test' },
        body: JSON.stringify(conversation.body()),
      })
      assert.equal(response.status, 200, await response.text())
      const upstreamBody = upstream.requests.at(-1)!.json
      sent.set(conversation, [
        ...(sent.get(conversation) ?? []),
        JSON.stringify(upstreamBody.messages),
      ])
    }
    const output = (name: string, turn: number) =>
      Array.from({ length: 30 }, (_, i) => `${name} ${turn} line ${i}`).join('\n')
    main.ran(output('main', 0))
    await send(main)
    // The subagents run at once, their turns interleaved with each other's and the main one's.
    for (let turn = 1; turn <= 4; turn++) {
      for (const [n, sub] of subagents.entries()) {
        sub.ran(output(`sub${n}`, turn))
        await send(sub)
      }
      if (turn % 2 === 0) {
        main.ran(output('main', turn))
        await send(main)
      }
    }
    // Each conversation's requests extend its own previous one, byte for byte.
    for (const [conversation, bodies] of sent)
      for (let i = 1; i < bodies.length; i++)
        assert.ok(
          bodies[i]!.startsWith(bodies[i - 1]!.slice(0, -1)),
          `${conversation.system}: request ${i + 1} extends the one before`,
        )
    const requests = lines.map((line) => JSON.parse(line)).filter((e) => e.event === 'request')
    assert.equal(requests.length, 11)
    // A conversation's first request is new to the proxy; every later one goes on from its own.
    const firsts = 3
    assert.equal(
      requests.filter((e) => e.spliced === 1).length,
      requests.length - firsts,
      `spliced: ${requests.map((e) => e.spliced)}`,
    )
    const totals = stats.snapshot().totals
    assert.equal(totals.clientBreaks, 0, 'no conversation broke another one’s cache')
    // One numbering for the session: every id given once.
    const ids = [...sent.values()]
      .map((bodies) => bodies.at(-1)!)
      .flatMap((messages) => [...messages.matchAll(/\[#([0-9a-f]{4})\]/g)].map((m) => m[1]))
    assert.equal(new Set(ids).size, ids.length, `ids given once: ${ids}`)
    assert.equal(ids.length, 11)
  } finally {
    await proxy.close()
    await upstream.close()
  }
})
