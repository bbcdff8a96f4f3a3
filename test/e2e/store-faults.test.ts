/**
 * Store faults end to end (issue 7, item 1): Redis killed mid-session and restarted with AOF, a
 * SQLite database locked by another process, full, or read-only, and a proxy killed between its
 * store write and the upstream's answer. Also a client that goes away during a recall round
 * (item 2): the store-backed loop must stop with it.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, fetch as undiciFetch } from 'undici'
import { packageRoot } from '../../src/config/loop.js'
import { cachedStore } from '../../src/store/cached.js'
import { createStore } from '../../src/store/index.js'
import { openSqliteStore } from '../../src/store/sqlite.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { CLAUDE_TOOLS, TestAgent } from '../helpers/agent.js'
import { chatCompletion, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, scriptedModel } from '../helpers/model.js'
import { postChat, startProxy } from '../helpers/proxy.js'
import { startRedis } from '../helpers/redis-server.js'
import { makeProject } from '../helpers/workspace.js'
import { startCli, type Running } from '../helpers/cli.js'

const DAY = 86_400_000
const REPO = packageRoot()

function assertOpenAIError(json: any, code: string): void {
  assert.equal(typeof json?.error?.message, 'string', JSON.stringify(json))
  assert.equal(typeof json.error.type, 'string')
  assert.equal(json.error.code, code)
}

/** Polls until `check` holds, or fails naming `what`. */
async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

async function healthStatus(url: string): Promise<number> {
  try {
    return (await fetch(url + '/healthz', { signal: AbortSignal.timeout(3000) })).status
  } catch {
    return 0
  }
}

/** The first line's id of every tool message, in order: ['#0001', '#0002', …]. */
function toolIds(request: any): string[] {
  return request.messages
    .filter((m: any) => m.role === 'tool')
    .map((m: any) => /^\[(#[0-9a-f]+)[\] ]/.exec(String(m.content))?.[1] ?? `none: ${m.content}`)
}

const BASH = [
  { type: 'function', function: { name: 'Bash', parameters: { type: 'object', properties: {} } } },
  { type: 'function', function: { name: 'Glob', parameters: { type: 'object', properties: {} } } },
]

/**
 * A conversation of `turns` assistant turns, each with parallel calls and their results:
 * turn t has one Bash call per output in outputs[t].
 */
function conversation(outputs: readonly (readonly string[])[], stream = false) {
  const messages: any[] = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'work' },
  ]
  outputs.forEach((turn, t) => {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: turn.map((_, j) => ({
        id: `call_${t}_${j}`,
        type: 'function',
        function: { name: 'Bash', arguments: JSON.stringify({ command: `step ${t} ${j}` }) },
      })),
    })
    turn.forEach((output, j) =>
      messages.push({ role: 'tool', tool_call_id: `call_${t}_${j}`, content: output }),
    )
  })
  return { model: 'm', tools: BASH, stream, messages }
}

describe('store faults: Redis killed mid-session (AOF on)', () => {
  test('new results get a fast 503 while it is down, nothing is forwarded; after a restart the session goes on, same bytes, ids not reused', async () => {
    const redis = await startRedis({ spawn: true })
    const upstream = await startFakeUpstream()
    const store = await createStore(redis.url, { idleTtlMs: DAY })
    const project = makeProject()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store,
      workspace: await createWorkspace([project]),
    })
    const app = join(project, 'app.ts')
    upstream.setScript(
      scriptedModel([
        // Parallel calls: two results in one turn.
        {
          calls: [
            { name: 'Read', args: { file_path: app, offset: 1, limit: 50 } },
            { name: 'Bash', args: { command: 'echo before the outage' } },
          ],
        },
        { calls: [{ name: 'Bash', args: { command: 'seq 1 30' } }] },
        // Redis dies before the request that carries seq's result; then it comes back.
        { calls: [{ name: 'Read', args: { file_path: app, offset: 10, limit: 10 } }] },
        // A result stored before the outage, recalled after it.
        { calls: [{ name: 'recall', args: { id: '#0002' } }] },
        { content: 'done' },
        { content: 'bye' },
      ]),
    )
    const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project })
    const outage: { status: number; ms: number; retryAfter: string | null; json: any }[] = []
    const complete = agent.complete.bind(agent)
    agent.complete = async () => {
      if (agent.replies.length === 2) {
        redis.kill()
        await until(
          'healthz to see the outage',
          async () => (await healthStatus(proxy.url)) === 503,
        )
        const forwarded = upstream.requests.length
        for (const stream of [false, true, false]) {
          const started = performance.now()
          const reply = await postChat(proxy.url, {
            model: 'test-model',
            messages: agent.messages,
            tools: CLAUDE_TOOLS,
            stream,
          })
          outage.push({
            status: reply.status,
            ms: performance.now() - started,
            retryAfter: reply.headers.get('retry-after'),
            json: reply.json,
          })
        }
        assert.equal(upstream.requests.length, forwarded, 'nothing forwarded during the outage')
        await redis.restart()
        await until(
          'healthz after the restart',
          async () => (await healthStatus(proxy.url)) === 200,
        )
      }
      return complete()
    }
    try {
      assert.equal(await agent.ask('work'), 'done')
      assert.equal(await agent.ask('again'), 'bye')

      for (const attempt of outage) {
        assert.equal(attempt.status, 503)
        assert.equal(attempt.retryAfter, '1')
        assertOpenAIError(attempt.json, 'store_unavailable')
        assert.match(attempt.json.error.message, /redis store/)
        assert.ok(attempt.ms < 2500, `failed fast (${Math.round(attempt.ms)} ms)`)
      }
      assert.deepEqual(prefixViolations(upstream.requests), [])
      const requests = chatRequests(upstream.requests)
      const last = requests.at(-1)
      // #0005 is the recall's own answer, restored in the history of the last request.
      assert.deepEqual(toolIds(last), ['#0001', '#0002', '#0003', '#0004', '#0005'])
      assert.match(
        String(
          last.messages.find((m: any) => m.role === 'tool' && /^\[#0004/.test(m.content)).content,
        ),
        /Unchanged since #0001/,
      )
      const recalled = last.messages.find(
        (m: any) => m.role === 'tool' && /^\[#0005 recall #0002/.test(m.content),
      )
      assert.ok(recalled, 'the recall answer is in the history')
      assert.match(recalled.content, /\nbefore the outage$/)
    } finally {
      await proxy.close()
      await store.close()
      await upstream.close()
      await redis.stop()
      rmSync(project, { recursive: true, force: true })
    }
  })
})

describe('store faults: SQLite', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'lembas-store-faults-'))
    chmodSync(dir, 0o755) // the read-only test runs a proxy as another user inside it
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  test('a database locked by another process past the busy timeout: 503, nothing forwarded, then the same request goes through', async () => {
    const file = join(dir, 'locked.db')
    const sqlite = openSqliteStore(file, { idleTtlMs: DAY, busyTimeoutMs: 200 })
    const store = cachedStore(sqlite, { maxAgeMs: DAY / 2 })
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({ upstreamUrl: upstream.url, store })
    const headers = { 'x-session-id': 'locked' }
    let holder: ChildProcess | undefined
    try {
      const first = conversation([['one', 'two']])
      assert.equal((await postChat(proxy.url, first, headers)).status, 200)

      holder = await holdWriteLock(file)
      const second = conversation([
        ['one', 'two'],
        ['three', 'four', 'five'],
      ])
      const started = performance.now()
      const refused = await postChat(proxy.url, second, headers)
      const ms = performance.now() - started
      assert.equal(refused.status, 503)
      assert.equal(refused.headers.get('retry-after'), '1')
      assertOpenAIError(refused.json, 'store_unavailable')
      assert.match(refused.json.error.message, /SQLITE_BUSY/)
      assert.ok(refused.json.error.message.includes(file), 'names the file')
      assert.ok(ms < 3000, `${Math.round(ms)} ms`)
      assert.equal(upstream.requests.length, 1, 'never forwarded half-rendered')

      await release(holder)
      const retried = await postChat(proxy.url, second, headers)
      assert.equal(retried.status, 200)
      const [a, b] = chatRequests(upstream.requests)
      assert.deepEqual(toolIds(a), ['#0001', '#0002'])
      assert.deepEqual(toolIds(b), ['#0001', '#0002', '#0003', '#0004', '#0005'])
      assert.deepEqual(prefixViolations(upstream.requests), [])
      assert.equal(sqlite.db.pragma('integrity_check', { simple: true }), 'ok')
    } finally {
      holder?.kill('SIGKILL')
      await proxy.close()
      await store.close()
      await upstream.close()
    }
  })

  test('a full disk: 503 naming SQLITE_FULL, nothing forwarded, nothing torn; with room again the same request is rendered', async () => {
    const file = join(dir, 'full.db')
    const sqlite = openSqliteStore(file, { idleTtlMs: DAY })
    const store = cachedStore(sqlite, { maxAgeMs: DAY / 2 })
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({ upstreamUrl: upstream.url, store })
    const headers = { 'x-session-id': 'full' }
    try {
      assert.equal((await postChat(proxy.url, conversation([['small']]), headers)).status, 200)
      const limit = sqlite.db.pragma('max_page_count', { simple: true }) as number
      const pages = sqlite.db.pragma('page_count', { simple: true }) as number
      sqlite.db.pragma(`max_page_count = ${pages + 4}`)
      const big = Array.from({ length: 30_000 }, (_, i) => `line ${i} of a big output`).join('\n')
      const body = conversation([['small'], ['next', big]])
      const refused = await postChat(proxy.url, body, headers)
      assert.equal(refused.status, 503)
      assertOpenAIError(refused.json, 'store_unavailable')
      assert.match(refused.json.error.message, /SQLITE_FULL/)
      assert.equal(upstream.requests.length, 1)
      assert.equal(sqlite.db.pragma('integrity_check', { simple: true }), 'ok')

      sqlite.db.pragma(`max_page_count = ${limit}`)
      const retried = await postChat(proxy.url, body, headers)
      assert.equal(retried.status, 200)
      const sent = chatRequests(upstream.requests).at(-1)
      assert.deepEqual(toolIds(sent), ['#0001', '#0002', '#0003'])
      assert.match(sent.messages.at(-1).content, /^\[#0003\]\nline 0 of/)
      assert.match(sent.messages.at(-1).content, /lines elided, full output #0003\]/)
      assert.deepEqual(prefixViolations(upstream.requests), [])
    } finally {
      await proxy.close()
      await store.close()
      await upstream.close()
    }
  })

  test('a read-only store file: the proxy refuses to start with a message naming the file, and the data is intact', async () => {
    const sub = join(dir, 'readonly')
    const file = join(sub, 'store.db')
    const seed = openSqliteStore(file, { idleTtlMs: DAY })
    await seed.putIfAbsent('s', [['k', 'kept']])
    await seed.close()
    const bytes = readFileSync(file)
    chmodSync(file, 0o444)
    chmodSync(sub, 0o555)
    try {
      // Root ignores file modes: the proxy runs as nobody then.
      const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
      const started = await startCli(
        ['--port', '0', '--upstream', 'http://127.0.0.1:9/v1', '--store', `sqlite:${file}`],
        {},
        asNobody,
      ).then(
        (running) => ({ running }),
        (error: Error) => ({ error }),
      )
      if ('running' in started) {
        await stopCli(started.running)
        assert.fail('the proxy started on a read-only store')
      }
      assert.match(started.error.message, /exited 1/)
      assert.ok(started.error.message.includes(file), started.error.message)
      assert.match(started.error.message, /readonly|read-only|unable to open|SQLITE_CANTOPEN/i)
      assert.ok(readFileSync(file).equals(bytes), 'the file is unchanged')
    } finally {
      chmodSync(sub, 0o755)
      chmodSync(file, 0o644)
    }
    const back = openSqliteStore(file, { idleTtlMs: DAY })
    assert.deepEqual(await back.get('s', ['k']), ['kept'])
    assert.equal(back.db.pragma('integrity_check', { simple: true }), 'ok')
    await back.close()
  })

  test('a proxy killed (SIGKILL) after its store write, before the upstream answered: the retry renders byte-identically, and ids go on', async () => {
    const file = join(dir, 'crash.db')
    const upstream = await startFakeUpstream(() => ({ hang: true }))
    const args = ['--port', '0', '--upstream', upstream.url, '--store', `sqlite:${file}`]
    const long = Array.from({ length: 600 }, (_, i) => String(i + 1)).join('\n')
    // Parallel results: a capped one, two equal listings (a dedupe), a small one. No session
    // header: the retry must find its session through what the first attempt stored.
    const turn = [
      { name: 'Bash', args: { command: 'seq 1 600' }, output: long },
      { name: 'Glob', args: { pattern: '*.ts' }, output: '/p/a.ts\n/p/b.ts' },
      { name: 'Glob', args: { pattern: '*.ts' }, output: '/p/a.ts\n/p/b.ts' },
      { name: 'Bash', args: { command: 'echo hi' }, output: 'hi' },
    ]
    const body = {
      model: 'm',
      tools: BASH,
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'work' },
        {
          role: 'assistant',
          content: null,
          tool_calls: turn.map((call, i) => ({
            id: `call_crash_${i}`,
            type: 'function',
            function: { name: call.name, arguments: JSON.stringify(call.args) },
          })),
        },
        ...turn.map((call, i) => ({
          role: 'tool',
          tool_call_id: `call_crash_${i}`,
          content: call.output,
        })),
      ],
    }
    let first: Running | undefined
    let second: Running | undefined
    try {
      first = await startCli(args)
      const pending = postChat(first.url, body).catch(() => undefined)
      await until('the upstream to receive the request', () => upstream.requests.length === 1)
      await stopCli(first, 'SIGKILL')
      await pending
      upstream.setScript(() => ({ json: chatCompletion({ content: 'ok' }) }))
      second = await startCli(args)
      const reply = await postChat(second.url, body)
      assert.equal(reply.status, 200)
      const [lost, retried] = upstream.requests
      assert.equal(retried!.body, lost!.body, 'the retried request is byte-identical')
      const tools = retried!.json.messages.filter((m: any) => m.role === 'tool')
      assert.deepEqual(toolIds(retried!.json), ['#0001', '#0002', '#0003', '#0004'])
      assert.match(tools[0].content, /lines elided, full output #0001\]/)
      assert.equal(tools[2].content, '[#0003] Same result as #0002.')

      // The next result gets the next id: nothing claimed before the crash is given again.
      const next = structuredClone(body)
      next.messages.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_after', type: 'function', function: { name: 'Bash', arguments: '{}' } },
          ],
        } as never,
        { role: 'tool', tool_call_id: 'call_after', content: 'after' } as never,
      )
      assert.equal((await postChat(second.url, next)).status, 200)
      assert.deepEqual(toolIds(upstream.requests.at(-1)!.json), [
        '#0001',
        '#0002',
        '#0003',
        '#0004',
        '#0005',
      ])
      assert.deepEqual(prefixViolations(upstream.requests), [])
    } finally {
      if (first) await stopCli(first, 'SIGKILL')
      if (second) await stopCli(second)
      await upstream.close()
    }
  })
})

describe('a client that goes away during a recall round', () => {
  let upstream: FakeUpstream
  let proxy: Awaited<ReturnType<typeof startProxy>>
  before(async () => {
    upstream = await startFakeUpstream()
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
  })

  for (const stream of [false, true]) {
    test(`aborts the second upstream call and makes no third (${stream ? 'stream' : 'non-stream'})`, async () => {
      upstream.requests.length = 0
      const model = scriptedModel([{ calls: [{ name: 'recall', args: { id: '#0001' } }] }])
      upstream.setScript((request, index) => (index === 0 ? model(request, 0) : { hang: true }))
      const controller = new AbortController()
      // A client of its own: the shared one would keep the proxy's server from closing quickly.
      const client = new Agent()
      const pending = undiciFetch(proxy.url + '/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
        body: JSON.stringify(conversation([['stored output']], stream)),
        signal: controller.signal,
        dispatcher: client,
      })
        .then((response) => response.text())
        .catch(() => undefined)
      await until('the recall round to reach the upstream', () => upstream.requests.length === 2)
      // The proxy answered the recall itself before asking again.
      assert.match(JSON.stringify(upstream.requests[1]!.json.messages.at(-1)), /#0002 recall #0001/)
      controller.abort()
      await pending
      await client.close()
      await until('the second upstream call to be aborted', () => upstream.requests[1]!.aborted)
      await sleep(300)
      assert.equal(upstream.requests.length, 2, 'no third call')
      // The proxy still serves.
      upstream.setScript(() => ({ json: chatCompletion({ content: 'ok' }) }))
      assert.equal((await postChat(proxy.url, conversation([['x']]))).status, 200)
    })
  }
})

// ── helpers: a second process holding the write lock, and the real command line ──

/** Another process takes SQLite's write lock (BEGIN EXCLUSIVE) on `file` and keeps it. */
async function holdWriteLock(file: string): Promise<ChildProcess> {
  const code = `
    const Database = require('better-sqlite3')
    const db = new Database(process.env.LOCK_FILE)
    db.exec('BEGIN EXCLUSIVE')
    process.stdout.write('locked\\n')
    process.stdin.on('end', () => { db.exec('ROLLBACK'); db.close(); process.exit(0) })
    process.stdin.resume()
  `
  const child = spawn(process.execPath, ['-e', code], {
    cwd: REPO,
    env: { ...process.env, LOCK_FILE: file },
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('locked') && resolve())
    child.once('exit', (code) => reject(new Error(`lock holder exited ${code}`)))
  })
  return child
}

async function release(holder: ChildProcess): Promise<void> {
  const exited = once(holder, 'exit')
  holder.stdin!.end()
  await exited
}

async function stopCli(running: Running, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return
  const exited = once(running.child, 'exit')
  running.child.kill(signal)
  await exited
}
