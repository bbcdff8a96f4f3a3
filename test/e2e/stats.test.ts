/**
 * GET /stats, GET /metrics, the request log line and `lembas-proxy stats`, through a real proxy
 * in front of the fake upstream.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStats, type SessionFigures, type StatsSnapshot } from '../../src/stats/index.js'
import { createStore, type Store } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { TestAgent } from '../helpers/agent.js'
import {
  chatChunks,
  startFakeUpstream,
  type FakeResponse,
  type FakeUpstream,
} from '../helpers/fake-upstream.js'
import { scriptedModel } from '../helpers/model.js'
import { postChat, requestLines, sseData, startProxy, type TestProxy } from '../helpers/proxy.js'
import { makeProject } from '../helpers/workspace.js'

const run = promisify(execFile)
const API_KEY = 'sk-CANARY-stats-0123456789'
const SECRET = 'lembas-CANARY-auth-secret'
const AUTH = { 'x-lembas-auth': SECRET }

describe('stats and metrics', () => {
  let upstream: FakeUpstream
  let project: string
  let store: Store
  let proxy: TestProxy
  const lines: string[] = []

  before(async () => {
    project = makeProject()
    const app = join(project, 'app.ts')
    // A read, its re-read (a stub), a listing twice (a dedupe) and a long command (a cap).
    const agentScript = scriptedModel([
      { calls: [{ name: 'Read', args: { file_path: app } }] },
      { calls: [{ name: 'Read', args: { file_path: app, offset: 50, limit: 31 } }] },
      { calls: [{ name: 'Glob', args: { pattern: '*.ts', path: project } }] },
      { calls: [{ name: 'Glob', args: { path: project, pattern: '*.ts' } }] },
      { calls: [{ name: 'Bash', args: { command: 'seq 1 1000' } }] },
      { content: 'All done.' },
    ])
    upstream = await startFakeUpstream(async (request, index) => {
      if (request.json?.stream) return llamaStream()
      const response = await agentScript(request, index)
      if ('json' in response) {
        const usage = {
          prompt_tokens: 100,
          completion_tokens: 10,
          total_tokens: 110,
          prompt_tokens_details: { cached_tokens: 80 },
        }
        ;(response.json as Record<string, unknown>).usage = usage
      }
      return response
    })
    store = await createStore('memory:', { idleTtlMs: 86_400_000 })
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store,
      workspace: await createWorkspace([project]),
      stats: createStats(),
      authSecret: SECRET,
      log: createLogger('info', (line) => void lines.push(line)),
    })

    const agent = new TestAgent({
      proxyUrl: proxy.url,
      workspace: project,
      headers: { authorization: `Bearer ${API_KEY}`, 'x-session-id': 'agent-1', ...AUTH },
    })
    assert.equal(await agent.ask('Tidy app.ts'), 'All done.')

    // A streamed answer from a llama.cpp server: `timings` on the final chunk, no usage.
    const streamed = await postChat(
      proxy.url,
      {
        model: 'm',
        stream: true,
        tools: [{ type: 'function', function: { name: 'Bash', parameters: { type: 'object' } } }],
        messages: [{ role: 'user', content: 'hi' }],
      },
      { authorization: `Bearer ${API_KEY}`, 'x-session-id': 'llama-1', ...AUTH },
    )
    assert.equal(streamed.status, 200)
    assert.equal(sseData(streamed.text).at(-1), '[DONE]')
  })

  after(async () => {
    await proxy.close()
    await store.close()
    await upstream.close()
    rmSync(project, { recursive: true, force: true })
  })

  test('GET /stats shows the session with its stubs, dedupes, caps, savings and usage', async () => {
    const response = await fetch(proxy.url + '/stats', { headers: AUTH })
    assert.equal(response.status, 200)
    const snapshot = (await response.json()) as StatsSnapshot
    // Most recent first; a session shows as its scope (tenant and session id, hashed).
    assert.equal(snapshot.sessions.length, 2)
    const [llama, agent] = snapshot.sessions as [SessionFigures, SessionFigures]
    assert.ok(!JSON.stringify(snapshot).includes('CANARY'))
    assert.equal(agent.requests, 6)
    // Named by what a person recognises: its first words, door, agent and model.
    assert.equal(agent.title, 'Tidy app.ts')
    assert.equal(agent.door, 'chat')
    assert.equal(typeof agent.model, 'string')
    assert.equal(agent.newResults, 5)
    assert.equal(agent.dedupes, 2, 'the re-read and the second listing')
    assert.equal(agent.caps, 1, 'the long command')
    assert.ok(agent.stubs >= 2, `stubs ${agent.stubs}`)
    assert.ok(agent.charsSaved > 0)
    assert.equal(agent.tokensSavedEstimate, Math.round(agent.charsSaved / 4))
    assert.equal(agent.promptTokens, 600)
    assert.equal(agent.completionTokens, 60)
    assert.equal(agent.cachedTokens, 480)
    assert.equal(agent.cachedRatio, 0.8)

    assert.equal(llama.requests, 1)
    assert.equal(llama.promptTokens, 100, 'cache_n + prompt_n')
    assert.equal(llama.cachedTokens, 90)
    assert.equal(llama.completionTokens, 5)

    assert.equal(snapshot.totals.requests, 7)
    assert.equal(snapshot.totals.cachedTokens, 570)
    assert.equal(snapshot.totals.cachedRatio, Math.round((570 / 700) * 10_000) / 10_000)
    assert.equal(snapshot.totals.upstreamErrors, 0)
    // Over time: the totals in 10-second points (this test's requests fall in one or two).
    const last = snapshot.series.at(-1)!
    assert.equal(last.requests, 7)
    assert.equal(last.cachedRatio, snapshot.totals.cachedRatio)
    assert.equal(last.inputTokensSaved, snapshot.totals.inputTokensSaved)
  })

  test('GET /stats lists the latest new results: id, how each was shown, sizes before and after', async () => {
    const snapshot = (await (
      await fetch(proxy.url + '/stats', { headers: AUTH })
    ).json()) as StatsSnapshot
    const agent = snapshot.sessions.find((s) => s.requests === 6)!
    const results = snapshot.recent
      .filter((r) => r.session === agent.session)
      .reverse()
      .flatMap((r) => r.results)
    assert.deepEqual(
      results.map((r) => [r.id, r.kind]),
      [
        ['#0001', 'read'],
        ['#0002', 'read: unchanged'],
        ['#0003', 'listing'],
        ['#0004', 'same result'],
        ['#0005', 'output: capped'],
      ],
    )
    // The stub, the "same result" and the capped output are shorter than the tool's text.
    for (const r of [results[1]!, results[3]!, results[4]!])
      assert.ok(r.charsAfter < r.charsBefore, `${r.id} shrank`)
    assert.equal(snapshot.recent[0]!.door, 'chat')
  })

  test('GET /metrics is Prometheus text with the metric names', async () => {
    const response = await fetch(proxy.url + '/metrics', { headers: AUTH })
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
    const text = await response.text()
    for (const line of text.split('\n')) {
      if (line === '') continue
      assert.match(
        line,
        /^(# (HELP|TYPE) [a-z_]+ .+|[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+|[a-z_]+(\{.*\})? \+Inf)$/,
        `not a Prometheus line: ${line}`,
      )
    }
    for (const name of [
      'lembas_requests_total',
      'lembas_request_duration_seconds_bucket',
      'lembas_upstream_errors_total',
      'lembas_tokens_saved_total',
      'lembas_chars_saved_total',
      'lembas_cached_token_ratio',
      'lembas_store_duration_seconds_bucket',
      'lembas_upstream_cached_tokens_total',
    ])
      assert.ok(text.includes(name), `missing ${name}`)
    assert.match(text, /^lembas_requests_total\{stream="false",status="200",door="chat"\} 6$/m)
    assert.match(text, /^lembas_dedupes_total 2$/m)
  })

  test('/stats and /metrics need the shared secret', async () => {
    assert.equal((await fetch(proxy.url + '/stats')).status, 401)
    assert.equal((await fetch(proxy.url + '/metrics')).status, 401)
  })

  test('one info line per request with the fields, and no key', () => {
    const requests = requestLines(lines)
    assert.equal(requests.length, 7)
    for (const line of requests) {
      for (const field of [
        'session',
        'messages',
        'newResults',
        'stubs',
        'dedupes',
        'caps',
        'charsSaved',
        'status',
        'ms',
        'stream',
        'spliced',
      ])
        assert.ok(field in line, `${field} in ${JSON.stringify(line)}`)
      assert.equal(line.level, 'info')
    }
    assert.equal(requests.filter((l) => l.stream).length, 1)
    assert.equal(requests.at(-2).caps, 1)
    const all = lines.join('')
    assert.ok(!all.includes('CANARY'), 'no API key or secret in the logs')
  })

  test('lembas-proxy stats --url prints the table, and --json the snapshot', async () => {
    const cli = ['--import', 'tsx', 'src/cli.ts', 'stats', '--url', proxy.url]
    const env = { ...process.env, LEMBAS_AUTH: SECRET }
    const table = await run(process.execPath, cli, { env })
    const rows = table.stdout.split('\n')
    assert.match(rows[1]!, /^session\s+requests\s+errors\s+new\s+stubs\s+dedupes\s+caps/)
    assert.ok(
      // Named by its first words and the end of its scope.
      rows.some((row) => /^Tidy app\.ts \(\S{8}\)\s+6\s+0\s+5\s+\d+\s+2\s+1\s/.test(row)),
      table.stdout,
    )
    assert.ok(
      rows.some((row) => /^total\s+7\s/.test(row)),
      table.stdout,
    )
    const json = await run(process.execPath, [...cli, '--json'], { env })
    assert.equal((JSON.parse(json.stdout) as StatsSnapshot).totals.requests, 7)
    // The base URL the agents are given (…/v1) names the proxy too.
    const v1 = ['--import', 'tsx', 'src/cli.ts', 'stats', '--json', '--url', proxy.url + '/v1/']
    assert.equal(JSON.parse((await run(process.execPath, v1, { env })).stdout).totals.requests, 7)
    // Without the secret: the 401, and what to pass.
    const refused = await run(process.execPath, cli, { env: { ...process.env } }).catch((e) => e)
    assert.match(
      refused.stderr,
      /answered 401: the proxy runs with --auth; pass its secret with --auth or \$LEMBAS_AUTH/,
    )
    // Nothing listening: the cause, not fetch's own "fetch failed", and exit 2.
    const closed = createServer().listen(0, '127.0.0.1')
    await once(closed, 'listening')
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const nowhere = ['--import', 'tsx', 'src/cli.ts', 'stats', '--url', `http://127.0.0.1:${port}`]
    await assert.rejects(
      run(process.execPath, nowhere),
      (error: { code: number; stderr: string }) => {
        assert.equal(error.code, 2)
        assert.match(error.stderr, /cannot reach http:\/\/127\.0\.0\.1:\d+\/stats: ECONNREFUSED/)
        return true
      },
    )
  })
})

/** llama.cpp's stream: `timings` on the last chunk (cache_n from the cache, prompt_n evaluated). */
function llamaStream(): FakeResponse {
  const chunks = chatChunks({ content: ['hel', 'lo'] })
  chunks[chunks.length - 1]!.timings = {
    cache_n: 90,
    prompt_n: 10,
    predicted_n: 5,
    prompt_ms: 12.5,
  }
  return { sse: chunks }
}

describe('the stats collector', () => {
  const finished = (session: string, usage?: unknown, timings?: unknown) => ({
    door: 'chat',
    session,
    status: 200,
    ms: 5,
    stream: false,
    usage,
    timings,
    recalls: 0,
    upstreamError: false,
  })

  test('keeps the most recently active sessions, and every request in the totals', () => {
    const stats = createStats({ maxSessions: 2 })
    for (const session of ['a', 'b', 'a', 'c']) stats.recordRequest(finished(session))
    const snapshot = stats.snapshot()
    assert.deepEqual(
      snapshot.sessions.map((s) => [s.session, s.requests]),
      [
        ['c', 1],
        ['a', 2],
      ],
    )
    assert.equal(snapshot.totals.requests, 4)
  })

  test('reads OpenAI, DeepSeek and llama.cpp usage', () => {
    const stats = createStats()
    stats.recordRequest(
      finished('s', { prompt_tokens: 10, prompt_tokens_details: { cached_tokens: 4 } }),
    )
    stats.recordRequest(finished('s', { prompt_tokens: 10, prompt_cache_hit_tokens: 6 }))
    stats.recordRequest(finished('s', undefined, { cache_n: 7, prompt_n: 3, predicted_n: 2 }))
    const totals = stats.snapshot().totals
    assert.equal(totals.promptTokens, 30)
    assert.equal(totals.cachedTokens, 17)
    assert.equal(totals.completionTokens, 2)
    assert.equal(totals.cachedRatio, Math.round((17 / 30) * 10_000) / 10_000)
  })

  test('reads the Responses API and Anthropic usage', () => {
    const stats = createStats()
    stats.recordRequest(
      finished('s', {
        input_tokens: 10,
        output_tokens: 3,
        input_tokens_details: { cached_tokens: 8 },
      }),
    )
    // Anthropic: input_tokens are only what was neither read from nor written to the cache.
    stats.recordRequest(
      finished('s', {
        input_tokens: 2,
        cache_read_input_tokens: 90,
        cache_creation_input_tokens: 8,
        output_tokens: 5,
      }),
    )
    const totals = stats.snapshot().totals
    assert.equal(totals.promptTokens, 110)
    assert.equal(totals.cachedTokens, 98)
    assert.equal(totals.completionTokens, 8)
  })
})

describe('drift: results of known tools the proxy does not recognise', () => {
  test('counted in /stats and /metrics, warned once per tool, no content logged', async () => {
    const upstream = await startFakeUpstream()
    const lines: string[] = []
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
      stats: createStats(),
      log: createLogger('info', (line) => void lines.push(line)),
    })
    try {
      const call = (id: string, name: string, args: object) => ({
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
      })
      const edit = { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' }
      const messages: object[] = [{ role: 'user', content: 'go' }]
      const steps: [string, object, string][] = [
        ['Edit', edit, 'SECRET-CONTENT: changed it as you asked.'],
        ['Read', { file_path: 'src/a.ts' }, '1\ta\n2\tb\n9\tSECRET-CONTENT'],
        ['Edit', edit, 'SECRET-CONTENT: changed it again.'],
        ['Edit', edit, 'The file src/a.ts has been updated successfully.'],
      ]
      for (const [i, [name, args, result]] of steps.entries()) {
        messages.push(call(`call_${i}`, name, args), {
          role: 'tool',
          tool_call_id: `call_${i}`,
          content: result,
        })
        const reply = await postChat(
          proxy.url,
          { model: 'm', tools: TOOLS, messages },
          { 'x-session-id': 'drift' },
        )
        assert.equal(reply.status, 200)
      }
      const snapshot = (await (await fetch(proxy.url + '/stats')).json()) as StatsSnapshot
      assert.equal(snapshot.totals.unrecognised, 3)
      assert.deepEqual(snapshot.unrecognisedByTool, { Edit: 2, Read: 1 })
      assert.equal(snapshot.sessions[0]!.unrecognised, 3)
      const metrics = await (await fetch(proxy.url + '/metrics')).text()
      assert.match(metrics, /^lembas_unrecognised_results_total\{tool="Edit"\} 2$/m)
      assert.match(metrics, /^lembas_unrecognised_results_total\{tool="Read"\} 1$/m)
      const warns = lines.map((line) => JSON.parse(line)).filter((l) => l.level === 'warn')
      assert.deepEqual(
        warns.map((w) => [w.event, w.tool, w.expected]),
        [
          ['unrecognised-result', 'Edit', 'a success answer'],
          ['unrecognised-result', 'Read', 'lines numbered in one run'],
        ],
      )
      assert.ok(!lines.join('').includes('SECRET-CONTENT'), 'no result text in the log')
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

const TOOLS = ['Read', 'Edit'].map((name) => ({
  type: 'function',
  function: { name, parameters: { type: 'object' } },
}))

test('a request without tools (forwarded as sent) is logged with its items, on every door', async () => {
  const lines: string[] = []
  const store = await createStore('memory:', { idleTtlMs: 86_400_000 })
  // Nothing listens on port 1: each request fails upstream, after its log fields are known.
  const proxy = await startProxy({
    upstreamUrl: 'http://127.0.0.1:1/v1',
    store,
    stats: createStats(),
    log: createLogger('info', (line) => void lines.push(line)),
  })
  try {
    const twoTurns = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
      { role: 'user', content: 'bye' },
    ]
    const bodies: [string, string, unknown, number][] = [
      ['chat', '/v1/chat/completions', { model: 'm', messages: twoTurns }, 3],
      ['messages', '/v1/messages', { model: 'm', max_tokens: 10, messages: twoTurns }, 3],
      ['responses', '/v1/responses', { model: 'm', input: twoTurns }, 3],
      ['responses', '/v1/responses', { model: 'm', input: 'hi' }, 1],
    ]
    for (const [, path, body] of bodies) {
      const response = await fetch(proxy.url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      assert.equal(response.status, 502, path)
      await response.arrayBuffer()
    }
    const logged = requestLines(lines)
    assert.deepEqual(
      logged.map((l) => [l.door, l.messages]),
      bodies.map(([door, , , count]) => [door, count]),
    )
  } finally {
    await proxy.close()
    await store.close()
  }
})
