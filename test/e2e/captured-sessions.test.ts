/**
 * Sessions captured from the real CLIs (test/fixtures/agents/<agent>/session-<version>*.json: the
 * last request of a live run, as the CLI sent it) go through a fresh proxy, blind (the run's
 * project is gone): every result gets its id, the full read its bracket, the re-reads their stub,
 * the edit its diff, the repeated listing or search "Same result as", and no result of a known
 * tool is left unrecognised. Kept so that a profile change is checked against the real CLIs'
 * texts even where the CLIs cannot run.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { createStats } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { scriptedClaude } from '../helpers/fake-anthropic.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { postChat, postTo, startProxy } from '../helpers/proxy.js'

interface Captured {
  readonly agent: string
  readonly cli: string
  readonly version: string
  readonly door: 'chat' | 'messages'
  readonly request: any
}

const root = new URL('../fixtures/agents/', import.meta.url)
const captured = readdirSync(root).flatMap((agent) =>
  readdirSync(new URL(`${agent}/`, root))
    .filter((file) => /^session-\d.*\.json$/.test(file))
    .map((file) => ({
      file: `${agent}/${file}`,
      session: JSON.parse(readFileSync(new URL(`${agent}/${file}`, root), 'utf8')) as Captured,
    })),
)

/** The tool results' texts of an upstream body, in order. */
function resultTexts(door: Captured['door'], body: any): string[] {
  const text = (content: any): string =>
    typeof content === 'string' ? content : content.map((p: any) => p.text ?? '').join('\n')
  if (door === 'chat')
    return body.messages.filter((m: any) => m.role === 'tool').map((m: any) => text(m.content))
  return body.messages.flatMap((m: any) =>
    Array.isArray(m.content)
      ? m.content.filter((b: any) => b.type === 'tool_result').map((b: any) => text(b.content))
      : [],
  )
}

describe('sessions captured from the real CLIs, through a fresh proxy', () => {
  test('the fixtures are there: Claude Code on two model names, Kilo CLI', () => {
    const names = captured.map((c) => c.file)
    assert.ok(names.some((n) => n.startsWith('claude-code/session-2.1.332-claude-sonnet')))
    assert.ok(names.some((n) => n.startsWith('claude-code/session-2.1.332-glm')))
    assert.ok(names.includes('kilo/session-7.7.7.json'))
  })

  for (const { file, session } of captured) {
    test(`${file} (${session.cli}@${session.version})`, async () => {
      const upstream = await startFakeUpstream(
        session.door === 'messages' ? scriptedClaude([{ text: 'ok' }]) : undefined,
      )
      const stats = createStats()
      const proxy = await startProxy({
        upstreamUrl: upstream.url,
        store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
        stats,
      })
      try {
        const body = { ...session.request, stream: false }
        const reply =
          session.door === 'chat'
            ? await postChat(proxy.url, body)
            : await postTo(proxy.url + '/v1/messages', body)
        assert.equal(reply.status, 200)
        const texts = resultTexts(session.door, upstream.requests.at(-1)!.json)
        assert.ok(texts.length >= 10, `${texts.length} results`)
        texts.forEach((text, i) =>
          assert.match(
            text,
            new RegExp(`^\\[#${(i + 1).toString(16).padStart(4, '0')}[ \\]]`),
            text.slice(0, 80),
          ),
        )
        assert.match(texts[0]!, /^\[#0001 \S+big\.ts lines 1-301(?: of 301)?\]\n/)
        assert.match(texts[1]!, /^\[#0002 \S+ lines 1-301(?: of 301)?\] Unchanged since #0001\b/)
        assert.match(texts[2]!, /^\[#0003 \S+ lines 101-120(?: of 301)?\] Unchanged since #0001\b/)
        assert.ok(
          /^\[#0005 \S+util\.ts sha [0-9a-f]{8}\]\n@@ -1,\d+ \+1,\d+ @@\n/.test(texts[4]!),
          texts[4]!.slice(0, 200),
        )
        assert.ok(
          texts.some((t) => /^\[#[0-9a-f]{4}\] Same result as #[0-9a-f]{4}\./.test(t)),
          'a repeated listing or search',
        )
        const snapshot = stats.snapshot()
        assert.equal(snapshot.totals.unrecognised, 0, JSON.stringify(snapshot.unrecognisedByTool))
      } finally {
        await proxy.close()
        await upstream.close()
      }
    })
  }
})
