/**
 * Clients of Anthropic models behind an OpenAI-compatible API mark their newest chat messages
 * with `cache_control` and move the markers the next turn (captured from the real CLIs: Qwen Code
 * on DashScope, opencode with its OpenRouter provider). A marker is no content: the result it
 * leaves is the same result, shown as before (it was shown anew, its bracket lost, every turn),
 * the requests go on the fast path (they all took the full path), and the move is no client break.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStore } from '../../src/store/index.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { postChat, promptBlock, requestLines, startProxy } from '../helpers/proxy.js'

const SESSIONS = [
  { agent: 'Qwen Code 0.24.4 on DashScope', file: 'qwen-code/dashscope-session.jsonl' },
  { agent: 'opencode 1.18.33 with OpenRouter', file: 'opencode/openrouter-session.jsonl' },
  {
    agent: 'opencode 1.18.33, OpenAI-compatible, an Anthropic model',
    file: 'opencode/compatible-anthropic-session.jsonl',
  },
]

/** A message's text, whatever its markers: what the model reads. */
function text(content: unknown): string {
  if (typeof content === 'string') return content
  return (content as { text?: string }[]).map((part) => part.text ?? '').join('\n')
}

describe('cache_control markers that move every turn', () => {
  for (const { agent, file } of SESSIONS) {
    test(`${agent}: each result shown as it was first, on the fast path, no client break`, async () => {
      const bodies = readFileSync(new URL(`../fixtures/agents/${file}`, import.meta.url), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { messages: { role: string; content: unknown }[] })
      const dir = mkdtempSync(join(tmpdir(), 'lembas-markers-'))
      const upstream = await startFakeUpstream()
      const lines: string[] = []
      const store = await createStore('sqlite:' + join(dir, 'store.db'), { idleTtlMs: 86_400_000 })
      const proxy = await startProxy({
        upstreamUrl: upstream.url,
        store,
        log: createLogger('info', (line) => lines.push(line)),
      })
      try {
        for (const body of bodies) {
          // Named, as opencode names its sessions: the second request goes on from the first.
          const reply = await postChat(
            proxy.url,
            { ...body, stream: false },
            { 'x-session-id': 'markers' },
          )
          assert.equal(reply.status, 200, reply.text.slice(0, 300))
        }
        const sent = upstream.requests.map((r) => r.json.messages as (typeof bodies)[0]['messages'])
        const results = (messages: (typeof sent)[0]) =>
          messages.filter((m) => m.role === 'tool').map((m) => text(m.content))
        // Every result as the first request that carried it showed it: the marker's move aside,
        // the upstream history of each request goes on from the one before.
        for (let i = 1; i < sent.length; i++) {
          const [before, now] = [results(sent[i - 1]!), results(sent[i]!)]
          assert.deepEqual(now.slice(0, before.length), before, `request ${i + 1}`)
        }
        // The prompt block in every request (a first request held back whole left it out of the
        // next one), and the markers where the client puts them now, no more (the stored
        // renderings kept theirs: one more upstream a turn).
        const markers = (json: unknown) => JSON.stringify(json).split('"cache_control"').length - 1
        sent.forEach((messages, i) => {
          assert.ok(text(messages[0]!.content).includes(promptBlock), `the block, request ${i + 1}`)
          assert.equal(markers(messages), markers(bodies[i]!.messages), `markers, request ${i + 1}`)
        })
        const last = results(sent.at(-1)!)
        assert.ok(last.length >= 3, `${last.length} results`)
        assert.match(last[0]!, /^\[#0001 \S+ lines 1-\d+/, 'the read keeps its bracket')
        // After the first request with a result, every one goes on from the one before.
        const logged = requestLines(lines)
        const withResults = logged.filter((l) => (l.newResults ?? 0) > 0)
        assert.ok(withResults.length >= 2)
        assert.deepEqual(
          withResults.slice(1).map((l) => l.spliced ?? 0),
          withResults.slice(1).map(() => 1),
          'the fast path',
        )
        assert.deepEqual(
          logged.flatMap((l) => (l.cacheBreak ? [l.cacheBreak] : [])),
          [],
          'a marker that moved breaks no cache',
        )
      } finally {
        await proxy.close()
        await upstream.close()
        await store.close()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  }
})
