/**
 * Replays sessions recorded from real agent CLIs (test/fixtures/agents/*: Qwen Code 0.24.4 and
 * opencode 1.18.33, run headless against a scripted server) through the proxy, request by
 * request, exactly as the agents sent them.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { packageRoot } from '../../src/config/loop.js'
import { createStore } from '../../src/store/index.js'
import { chatChunks, startFakeUpstream } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations } from '../helpers/model.js'
import { postChat, sseData, startProxy } from '../helpers/proxy.js'

const DAY = 86_400_000

function recorded(agent: string): { requests: any[]; headers: Record<string, string> } {
  const dir = packageRoot() + `test/fixtures/agents/${agent}/`
  const requests = readFileSync(dir + 'session.jsonl', 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  const captured = JSON.parse(readFileSync(dir + 'headers.json', 'utf8')) as Record<string, string>
  const headers: Record<string, string> = {}
  for (const name of ['user-agent', 'x-session-affinity', 'x-session-id'])
    if (captured[name]) headers[name] = captured[name]
  return { requests, headers }
}

function toolText(message: any): string {
  return typeof message.content === 'string' ? message.content : message.content[0].text
}

/** What the model sees for some of the recorded results (blind mode: no workspace given). */
const EXPECTED: Record<string, [number, RegExp][]> = {
  opencode: [
    [0, /^\[#0001 \/\S+\/big\.ts lines 1-301 of 301\]\n<path>/],
    [
      1,
      /^\[#0002 \/\S+\/big\.ts lines 101-120 of 301\] Unchanged since #0001, which already shows lines 1-301\.$/,
    ],
    [
      2,
      /^\[#0003 \/\S+\/big\.ts lines 1-301 of 301\] Unchanged since #0001, which already shows lines 1-301\.$/,
    ],
    [4, /^\[#0005\]\n<path>\S+<\/path>\n<type>directory<\/type>/],
    [11, /^\[#000c \/\S+\/util\.ts lines 1-7 of 7\]\n<path>/], // edited since #0007: in full
  ],
  'qwen-code': [
    [0, /^\[#0001 \/\S+\/big\.ts lines 1-301\]\n\/\/ big\.ts/],
    [
      1,
      /^\[#0002 \/\S+\/big\.ts lines 101-120\] Unchanged since #0001, which already shows lines 1-301\.$/,
    ],
    [2, /^\[#0003\]\n\[File src\/big\.ts unchanged since last read in this session/], // its own stub
  ],
}

for (const agent of ['qwen-code', 'opencode']) {
  describe(`a recorded ${agent} session, replayed through the proxy`, () => {
    test('every earlier message goes upstream byte-identical, and each new result gets the next id', async () => {
      const { requests, headers } = recorded(agent)
      const upstream = await startFakeUpstream(() => ({ sse: chatChunks({ content: ['ok'] }) }))
      const proxy = await startProxy({
        upstreamUrl: upstream.url,
        store: await createStore('memory:', { idleTtlMs: DAY }),
      })
      try {
        for (const request of requests) {
          const reply = await postChat(proxy.url, request, headers)
          assert.equal(reply.status, 200)
          assert.equal(sseData(reply.text).at(-1), '[DONE]')
        }
        const withTools = upstream.requests.filter((r) => (r.json?.tools ?? []).length > 0)
        assert.deepEqual(prefixViolations(withTools), [])
        const last = chatRequests(withTools).at(-1)
        const tools = last.messages.filter((m: any) => m.role === 'tool')
        assert.ok(tools.length >= 8, `${tools.length} tool results`)
        tools.forEach((message: any, i: number) => {
          const id = '#' + (i + 1).toString(16).padStart(4, '0')
          assert.ok(
            toolText(message).startsWith(`[${id}`),
            `${id}: ${toolText(message).slice(0, 80)}`,
          )
        })
        // The content keeps the agent's shape: parts for Qwen Code, strings for opencode.
        const clientTools = requests.at(-1).messages.filter((m: any) => m.role === 'tool')
        assert.deepEqual(
          tools.map((m: any) => typeof m.content),
          clientTools.map((m: any) => typeof m.content),
        )
        assert.equal(last.tools.at(-1).function.name, 'recall')
        for (const [index, pattern] of EXPECTED[agent]!)
          assert.match(toolText(tools[index]), pattern)
      } finally {
        await proxy.close()
        await upstream.close()
      }
    })
  })
}
