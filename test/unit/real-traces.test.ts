/**
 * Results of real mini-swe-agent sessions (test/fixtures/real-traces/mini-swe-agent.json, copied
 * verbatim from research/real-traces): what the engine is told about each, in blind mode, and what
 * the model sees when they go through the proxy in order.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { packageRoot } from '../../src/config/loop.js'
import { resultFacts, type FileViews } from '../../src/pipeline/facts.js'
import { createStore } from '../../src/store/index.js'
import { classifyCall, defaultProfile } from '../../src/tools/index.js'
import type { ToolDefinition } from '../../src/wire/chat.js'
import { chatChunks, startFakeUpstream } from '../helpers/fake-upstream.js'
import { postChat, startProxy } from '../helpers/proxy.js'

interface Sample {
  readonly title: string
  readonly call: { readonly name: string; readonly arguments: string }
  readonly result: string
  readonly expect:
    | {
        readonly kind: 'read'
        readonly path: string
        /** Where the file is, when that is not the path as given (`cd DIR && …`). */
        readonly absPath?: string
        readonly start: number
        readonly end: number
      }
    | { readonly kind: 'listing'; readonly group: string }
    | { readonly kind: 'other' }
}

const fixture = JSON.parse(
  readFileSync(packageRoot() + 'test/fixtures/real-traces/mini-swe-agent.json', 'utf8'),
) as { tools: ToolDefinition[]; samples: Sample[] }
const none = new Map<string, ToolDefinition>()
const views: FileViews = { content: async () => undefined }

describe('mini-swe-agent: real results', () => {
  test('each is what its command and return code say: the wrapper is never lines of the file', async () => {
    for (const sample of fixture.samples) {
      const classified = classifyCall(defaultProfile, sample.call.name, sample.call.arguments, none)
      const { call } = await resultFacts(
        classified,
        sample.result,
        defaultProfile,
        undefined,
        views,
      )
      const got =
        call.kind === 'read'
          ? {
              kind: 'read',
              path: call.path,
              ...(call.absPath === call.path ? {} : { absPath: call.absPath }),
              start: call.start,
              end: call.end,
            }
          : call.kind === 'listing'
            ? { kind: 'listing', group: call.group }
            : { kind: call.kind }
      assert.deepEqual(got, sample.expect, `${sample.title}: ${sample.call.arguments}`)
    }
  })

  test('through the proxy: brackets state the lines shown; an unchanged re-read is a stub', async () => {
    const upstream = await startFakeUpstream(() => ({ sse: chatChunks({ content: ['ok'] }) }))
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: 60_000 }),
    })
    try {
      const messages: object[] = [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'Fix the issue.' },
      ]
      for (const [i, sample] of fixture.samples.entries()) {
        const id = `call_${i}`
        messages.push(
          {
            role: 'assistant',
            content: '',
            tool_calls: [{ id, type: 'function', function: sample.call }],
          },
          { role: 'tool', tool_call_id: id, content: sample.result },
        )
        const body = { model: 'm', stream: true, tools: fixture.tools, messages }
        assert.equal((await postChat(proxy.url, body)).status, 200)
      }
      const sent = upstream.requests.at(-1)?.json as {
        messages: { role: string; content: string }[]
      }
      const texts = sent.messages.filter((m) => m.role === 'tool').map((m) => m.content)
      const firstLines = texts.map((text) => text.split('\n')[0])
      assert.deepEqual(firstLines.slice(0, 3), [
        '[#0001 src/sqlfluff/rules/L060.py lines 40-45]',
        '[#0002 src/sqlfluff/rules/L060.py lines 40-45] Unchanged since #0001, which already shows lines 40-45.',
        // sed -i changed them in between: another text, in full.
        '[#0003 src/sqlfluff/rules/L060.py lines 40-45]',
      ])
      assert.equal(texts[0], firstLines[0] + '\n' + fixture.samples[0]!.result)
      assert.ok(
        firstLines.includes(
          '[#0009 src/marshmallow/schema.py lines 674-680] Unchanged since #0008, which already shows lines 670-680.',
        ),
        firstLines.join('\n'),
      )
      assert.ok(firstLines.includes('[#000a django/db/models/fields/mixins.py lines 12-20]'))
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})
