/**
 * The fast path (a request that goes on from the session's previous one) must send exactly the
 * bytes the full path sends. The same sessions run through a proxy with it and one without.
 */
import assert from 'node:assert/strict'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { packageRoot } from '../../src/config/loop.js'
import { createLogger } from '../../src/log.js'
import { createStore } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { TestAgent } from '../helpers/agent.js'
import { responsesDoor } from '../helpers/doors.js'
import { chatChunks, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { scriptedModel } from '../helpers/model.js'
import { chatWithResults, postChat, requestLines, startProxy } from '../helpers/proxy.js'
import { SpliceCache } from '../../src/pipeline/splice.js'
import { makeProject } from '../helpers/workspace.js'

const DAY = 86_400_000

function plan(project: string) {
  const app = join(project, 'app.ts')
  return [
    { calls: [{ name: 'Read', args: { file_path: app } }] },
    { calls: [{ name: 'Read', args: { file_path: app, offset: 5, limit: 5 } }] },
    {
      calls: [
        {
          name: 'Edit',
          args: { file_path: app, old_string: 'line7 = 7', new_string: 'line7 = 70' },
        },
      ],
    },
    { calls: [{ name: 'Glob', args: { pattern: '*.ts', path: project } }] },
    { calls: [{ name: 'Glob', args: { pattern: '*.ts', path: project } }] },
    {
      content: 'Looking again.',
      calls: [{ name: 'recall', args: { id: '#0001', offset: 1, limit: 2 } }],
    },
    { calls: [{ name: 'Bash', args: { command: 'seq 1 800' } }] },
    { content: 'done' },
  ]
}

async function run(spliceChars: number | undefined, stream: boolean) {
  const project = makeProject()
  const upstream = await startFakeUpstream(scriptedModel(plan(project)))
  const lines: string[] = []
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store,
    workspace: await createWorkspace([project]),
    log: createLogger('info', (line) => lines.push(line)),
    ...(spliceChars === undefined ? {} : { spliceChars }),
  })
  try {
    const agent = new TestAgent({
      proxyUrl: proxy.url,
      workspace: project,
      stream,
      headers: { 'x-session-id': 'splice' },
    })
    await agent.ask('work')
    const spliced = requestLines(lines).map((e) => e.spliced)
    return {
      bodies: upstream.requests.map((r) => r.body.replaceAll(project, '<project>')),
      spliced,
    }
  } finally {
    await proxy.close()
    await upstream.close()
    await store.close()
    rmSync(project, { recursive: true, force: true })
  }
}

for (const stream of [false, true]) {
  test(`the fast path sends the same bytes as the full path (${stream ? 'streaming' : 'non-streaming'})`, async () => {
    const fast = await run(undefined, stream)
    const full = await run(0, stream)
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
  })
}

describe('the fast path falls back when the history is not a continuation', () => {
  let upstream: FakeUpstream
  before(async () => {
    upstream = await startFakeUpstream(() => ({ sse: chatChunks({ content: ['ok'] }) }))
  })
  after(() => upstream.close())

  test('a recorded opencode session replays identically with and without it, rewinds included', async () => {
    const requests = readFileSync(
      packageRoot() + 'test/fixtures/agents/opencode/session.jsonl',
      'utf8',
    )
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    // Replay, then a rewind to the 6th request, then the rest again: the fast path must notice.
    const sequence = [...requests, ...requests.slice(5)]
    const bodies: string[][] = []
    for (const spliceChars of [undefined, 0]) {
      upstream.requests.length = 0
      const proxy = await startProxy({
        upstreamUrl: upstream.url,
        store: await createStore('memory:', { idleTtlMs: DAY }),
        sessionHeader: 'x-session-affinity',
        ...(spliceChars === undefined ? {} : { spliceChars }),
      })
      try {
        for (const request of sequence) {
          const reply = await postChat(proxy.url, request, { 'x-session-affinity': 'ses_replay' })
          assert.equal(reply.status, 200)
        }
        bodies.push(upstream.requests.map((r) => r.body))
      } finally {
        await proxy.close()
      }
    }
    assert.equal(bodies[0]!.length, sequence.length)
    bodies[0]!.forEach((body, i) => assert.equal(body, bodies[1]![i], `request ${i + 1}`))
  })
})

test('a remembered 1 MB session weighs kilobytes: spans of the client’s bytes, not a copy', async (t) => {
  const upstream = await startFakeUpstream()
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const splice = new SpliceCache(64 * 1024 * 1024)
  const proxy = await startProxy({ upstreamUrl: upstream.url, store, splice })
  t.after(async () => {
    await proxy.close()
    await upstream.close()
    await store.close()
  })
  const line = (i: number) => `row ${i} ` + 'x'.repeat(40) + '\n'
  const output = (k: number) => Array.from({ length: 1000 }, (_, i) => line(k * 1000 + i)).join('')
  const results = Array.from({ length: 20 }, (_, k) => ({ id: `call_${k}`, output: output(k) }))
  const body = chatWithResults(results)
  const headers = { 'x-session-id': 'big' }
  assert.equal((await postChat(proxy.url, body, headers)).status, 200)
  for (let turn = 0; turn < 3; turn++) {
    body.messages.push({ role: 'assistant', content: `turn ${turn}` } as never)
    body.messages.push({ role: 'user', content: 'go on' } as never)
    assert.equal((await postChat(proxy.url, body, headers)).status, 200)
  }
  const size = JSON.stringify(body).length
  assert.ok(size > 1_000_000, `the history is over 1 MB: ${size}`)
  assert.ok(splice.bytes > 0, 'the session is remembered')
  assert.ok(splice.bytes < 64 * 1024, `it holds ${splice.bytes} bytes`)
  const bodies = upstream.requests.map((r) => r.body)
  for (let i = 1; i < bodies.length; i++)
    assert.ok(
      bodies[i]!.startsWith(bodies[i - 1]!.slice(0, bodies[i - 1]!.lastIndexOf(']'))),
      `request ${i + 1} repeats the history before it`,
    )
})

/**
 * Codex names its session in the body (`prompt_cache_key`) and in a `session-id` header that is
 * not a session source (its scope stays the body's): the header still keeps each session's
 * fast-path memory apart. A key holds four sessions' states; six sessions of one key, their
 * requests interleaved, all go on the fast path with it, and without it evict each other.
 */
test('sessions named in the body keep their fast path apart by their affinity header', async () => {
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const upstream = await startFakeUpstream((request, n) =>
    responsesDoor.respond(request, { text: 'ok' }, n),
  )
  const lines: string[] = []
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store,
    log: createLogger('info', (line) => lines.push(line)),
  })
  const sessions = Array.from({ length: 10 }, (_, i) => `0199a1b2-0000-7000-8000-00000000000${i}`)
  const input = (session: string, turns: number) => [
    { type: 'message', role: 'user', content: `Task of ${session}.` },
    ...Array.from({ length: turns }, (_, t) => [
      {
        type: 'function_call',
        call_id: `call_${t}`,
        name: 'shell',
        arguments: JSON.stringify({ command: `seq ${t} 40` }),
      },
      {
        type: 'function_call_output',
        call_id: `call_${t}`,
        output: Array.from({ length: 40 - t }, (_, k) => `${session} ${t + k}`).join('\n'),
      },
    ]).flat(),
  ]
  const spliced = async (affinity: boolean): Promise<number[]> => {
    const from = lines.length
    for (let turns = 1; turns <= 3; turns++)
      for (const session of sessions) {
        const response = await fetch(`${proxy.url}/v1/responses`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer one-key',
            ...(affinity ? { 'session-id': session } : {}),
          },
          body: JSON.stringify({
            model: 'm',
            instructions: 'You are Codex.',
            tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' } }],
            input: input(affinity ? session : `${session}-plain`, turns),
            prompt_cache_key: affinity ? session : `${session}-plain`,
          }),
        })
        assert.equal(response.status, 200)
        await response.text()
      }
    return requestLines(lines.slice(from)).map((event) => event.spliced)
  }
  try {
    const apart = await spliced(true)
    assert.deepEqual(apart.slice(sessions.length), Array(2 * sessions.length).fill(1), `${apart}`)
    const shared = await spliced(false)
    assert.ok(shared.slice(sessions.length).includes(0), `one key's eight states: ${shared}`)
  } finally {
    await proxy.close()
    await upstream.close()
    await store.close()
  }
})
