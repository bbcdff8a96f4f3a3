/**
 * Results of real agent sessions (test/fixtures/real-traces/*.json, copied verbatim from
 * research/real-traces): what the engine is told about each, in blind mode, and what the model
 * sees when they go through the proxy in order.
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

interface Fixture {
  readonly tools: ToolDefinition[]
  readonly samples: Sample[]
}

const load = (name: string) =>
  JSON.parse(
    readFileSync(packageRoot() + `test/fixtures/real-traces/${name}.json`, 'utf8'),
  ) as Fixture
const fixture = load('mini-swe-agent')
const none = new Map<string, ToolDefinition>()
const views: FileViews = { content: async () => undefined }

/** Each sample's call and result as the engine is told about them: a read's place, or its kind. */
async function checkFacts(samples: readonly Sample[]): Promise<void> {
  for (const sample of samples) {
    const classified = classifyCall(defaultProfile, sample.call.name, sample.call.arguments, none)
    const { call } = await resultFacts(classified, sample.result, defaultProfile, undefined, views)
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
}

/** The tool texts the upstream got once every sample went through the proxy, one turn each. */
async function throughProxy(fixture: Fixture): Promise<string[]> {
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
    return sent.messages.filter((m) => m.role === 'tool').map((m) => m.content)
  } finally {
    await proxy.close()
    await upstream.close()
  }
}

describe('mini-swe-agent: real results', () => {
  test('each is what its command and return code say: the wrapper is never lines of the file', async () => {
    await checkFacts(fixture.samples)
  })

  test('through the proxy: brackets state the lines shown; an unchanged re-read is a stub', async () => {
    const texts = await throughProxy(fixture)
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
  })
})

describe('OpenHands CodeAct V0: its agent skills in execute_ipython_cell', () => {
  const openHands = load('openhands-codeact')

  test('open_file is a read of the window its numbers show; an edit that failed changed nothing', async () => {
    await checkFacts(openHands.samples)
  })

  test('through the proxy: the window read again unchanged after a failed edit is a stub', async () => {
    const texts = await throughProxy(openHands)
    const firstLines = texts.map((text) => text.split('\n')[0])
    assert.deepEqual(firstLines, [
      '[#0001 /workspace/src/App.css lines 1-42 of 42]',
      // The edit that worked, as it came: its window is not the change.
      '[#0002]',
      '[#0003 /workspace/src/App.tsx lines 1-14 of 14]',
      '[#0004]',
      '[#0005 /workspace/src/PullRequestViewer.tsx lines 1-100 of 112]',
      '[#0006]',
      '[#0007 /workspace/src/PullRequestViewer.tsx lines 1-100 of 112] Unchanged since #0005, which already shows lines 1-100.',
      // Changed by the edit since #0001: in full.
      '[#0008 /workspace/src/App.css lines 1-79 of 79]',
    ])
    assert.equal(texts[6], firstLines[6], 'the stub is all the model gets of the re-read')
    for (const k of [0, 1, 2, 3, 4, 5, 7])
      assert.equal(texts[k], firstLines[k] + '\n' + openHands.samples[k]!.result)
  })
})
