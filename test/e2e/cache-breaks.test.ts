/**
 * Who broke the cache: when a client changes what it already sent (prunes an old result,
 * rewrites its tools), the proxy records, for that request, the first item that differs, that
 * the client changed it, and the previous request's tokens after it: per session in /stats, in
 * /metrics and in the log line. Claude Code's moving cache breakpoint is no break; an `--elide`
 * batch is one the proxy made. On every door, on the fast path and the full one.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStats } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { DOORS, type Door, type DoorCall, type DoorClient } from '../helpers/doors.js'
import { startFakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js'
import { loop, requestLines, startProxy } from '../helpers/proxy.js'

const DAY = 86_400_000
const PRUNED = '[Old tool result content cleared]'

function output(step: number): string {
  return Array.from({ length: 200 }, (_, i) => `step ${step} line ${i + 1}`).join('\n')
}

/** The model: a Bash call per request, for ever. */
function script(door: Door) {
  let n = 0
  return (request: RecordedRequest) => {
    const step = n++
    const call: DoorCall = { id: `call_${step}`, name: 'Bash', args: { command: `log ${step}` } }
    return door.respond(request, { calls: [call] }, step)
  }
}

/** The tool results in a door's history, as the client holds them. */
function resultSlots(door: Door, history: any[]): { item: number; set(text: string): void }[] {
  const slots: { item: number; set(text: string): void }[] = []
  history.forEach((item, index) => {
    if (door.name === 'chat' && item.role === 'tool')
      slots.push({ item: index, set: (text) => (item.content = text) })
    if (door.name === 'responses' && item.type === 'function_call_output')
      slots.push({ item: index, set: (text) => (item.output = text) })
    if (door.name === 'messages' && Array.isArray(item.content))
      for (const block of item.content)
        if (block.type === 'tool_result')
          slots.push({ item: index, set: (text) => (block.content = text) })
  })
  return slots
}

/** Claude Code's way: a cache breakpoint on the last block of the last message only. */
function moveBreakpoint(history: any[]): void {
  for (const message of history)
    if (Array.isArray(message.content))
      for (const block of message.content) delete block.cache_control
  const last = history.at(-1)
  if (typeof last.content === 'string') last.content = [{ type: 'text', text: last.content }]
  last.content.at(-1).cache_control = { type: 'ephemeral' }
}

async function turn(door: Door, client: DoorClient, url: string, step: number) {
  if (door.name === 'messages') moveBreakpoint(client.history)
  const answer = await client.send(url)
  assert.equal(answer.status, 200, answer.raw.slice(0, 300))
  client.results(answer.calls, [output(step)])
}

for (const door of DOORS) {
  test(`${door.name}: a pruned result (full path) and new tools (fast path) are the client's breaks; a moving breakpoint is none`, async () => {
    const upstream = await startFakeUpstream()
    upstream.setScript(script(door))
    const stats = createStats()
    const lines: string[] = []
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      stats,
      log: createLogger('info', (line) => void lines.push(line)),
    })
    try {
      const client = door.client({ stream: false })
      client.user('work')
      for (let step = 0; step < 4; step++) await turn(door, client, proxy.url, step)
      let session = (await stats.snapshot()).sessions[0]!
      assert.equal(session.clientBreaks, 0, `no break while the client only appends`)

      // The agent prunes its oldest result.
      const oldest = resultSlots(door, client.history)[0]!
      oldest.set(PRUNED)
      await turn(door, client, proxy.url, 4)
      session = stats.snapshot().sessions[0]!
      assert.equal(session.clientBreaks, 1, JSON.stringify(session.breaks))
      const pruned = session.breaks.at(-1)!
      assert.equal(pruned.by, 'client')
      assert.equal(pruned.item, oldest.item, 'the first item that differs')
      assert.equal(
        pruned.role,
        { chat: 'tool', responses: 'function_call_output', messages: 'user' }[door.name],
      )
      // The previous request carried three results from there on (and their calls, as JSON).
      const results = (3 * output(0).length) / 4
      assert.ok(pruned.tokens > results && pruned.tokens < results * 1.3, `${pruned.tokens}`)
      const logged = requestLines(lines)
      assert.deepEqual(logged.at(-1).cacheBreak, {
        item: pruned.item,
        role: pruned.role,
        by: 'client',
        tokens: pruned.tokens,
      })

      // Two more plain turns: no break; then the agent adds a tool.
      await turn(door, client, proxy.url, 5)
      await turn(door, client, proxy.url, 6)
      assert.equal(stats.snapshot().sessions[0]!.clientBreaks, 1)
      const send = client.send.bind(client)
      client.send = async (url) => {
        const original = globalThis.fetch
        globalThis.fetch = (async (input: any, init: any) => {
          const body = JSON.parse(init.body)
          body.tools = [
            ...body.tools,
            {
              ...body.tools[0],
              name: 'Other',
              function: body.tools[0].function && { ...body.tools[0].function, name: 'Other' },
            },
          ]
          return original(input, { ...init, body: JSON.stringify(body) })
        }) as typeof fetch
        try {
          return await send(url)
        } finally {
          globalThis.fetch = original
        }
      }
      await turn(door, client, proxy.url, 7)
      session = stats.snapshot().sessions[0]!
      assert.equal(session.clientBreaks, 2)
      assert.equal(session.breaks.at(-1)!.field, 'tools')
      assert.equal(stats.snapshot().totals.clientBreaks, 2)
      const metrics = await stats.metrics()
      assert.match(metrics, /lembas_cache_breaks_total\{by="client"\} 2/)
      assert.match(metrics, /lembas_cache_break_tokens_total\{by="client"\} [1-9]/)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
}

test('an --elide batch is the proxy’s break, not the client’s', async () => {
  const door = DOORS[0]!
  const upstream = await startFakeUpstream()
  upstream.setScript(script(door))
  const stats = createStats()
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: DAY }),
    stats,
    elide: {
      thresholdTokens: 3000,
      keepResults: 1,
      horizon: 20,
      cachedDiscount: 0.9,
      writePremium: 0,
      standIn: loop.proxy.elide.stand_in,
    },
  })
  try {
    const client = door.client({ stream: false })
    client.user('work')
    for (let step = 0; step < 8; step++) await turn(door, client, proxy.url, step)
    const { totals, sessions } = stats.snapshot()
    assert.equal(totals.clientBreaks, 0, JSON.stringify(sessions[0]!.breaks))
    assert.ok(totals.proxyBreaks >= 1, `a batch: ${JSON.stringify(sessions[0]!.breaks)}`)
    assert.ok(sessions[0]!.breaks.every((b) => b.by === 'proxy' && b.tokens > 0))
  } finally {
    await proxy.close()
    await upstream.close()
  }
})
