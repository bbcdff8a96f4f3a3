/**
 * Security (issue 7, item 5), end to end: API keys never in logs, records or the store; hop-by-hop
 * and proxy headers never reach the upstream; another key can neither continue nor recall a
 * session; workspace confinement holds through the pipeline; and the optional shared secret
 * (`--auth`, header x-lembas-auth) is required, compared, and never forwarded.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { request as httpRequest, type Server } from 'node:http'
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import type { AddressInfo } from 'node:net'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { serve } from '@hono/node-server'
import { Redis } from 'ioredis'
import { pipelineSettings } from '../../src/config/pipeline.js'
import { createApp } from '../../src/http/app.js'
import { createLogger } from '../../src/log.js'
import { createRecorder } from '../../src/record/recorder.js'
import { createStore, type Store } from '../../src/store/index.js'
import { createUpstream } from '../../src/upstream/index.js'
import { createWorkspace, type Workspace } from '../../src/workspace/index.js'
import {
  chatChunks,
  chatCompletion,
  startFakeUpstream,
  type FakeUpstream,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import { chatRequests, scriptedModel } from '../helpers/model.js'
import { loop, postChat, postTo } from '../helpers/proxy.js'
import { startRedis } from '../helpers/redis-server.js'
import { startCli, type Running } from '../helpers/cli.js'

const DAY = 86_400_000
const TOOLS = ['Bash', 'Read'].map((name) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: {} } },
}))

/** One assistant turn of calls and their results, after a user message. */
function withResults(calls: { id: string; name?: string; args?: object; output: string }[]) {
  return {
    model: 'm',
    tools: TOOLS,
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'work' },
      {
        role: 'assistant',
        content: null,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name ?? 'Bash', arguments: JSON.stringify(call.args ?? {}) },
        })),
      },
      ...calls.map((call) => ({ role: 'tool', tool_call_id: call.id, content: call.output })),
    ],
  }
}

const toolTexts = (request: any): string[] =>
  request.messages.filter((m: any) => m.role === 'tool').map((m: any) => String(m.content))

interface App {
  readonly url: string
  close(): Promise<void>
}

/** The app as cli.ts builds it, with the options the shared test helper does not take. */
async function startApp(options: {
  upstreamUrl: string
  store: Store
  log?: ReturnType<typeof createLogger>
  recorder?: ReturnType<typeof createRecorder>
  authSecret?: string
  workspace?: Workspace
}): Promise<App> {
  const upstream = createUpstream({ baseUrl: options.upstreamUrl, timeoutMs: 10_000 })
  const app = createApp({
    ...pipelineSettings(loop, { sessionHeader: 'x-session-id' }),
    store: options.store,
    upstream,
    workspace: options.workspace,
    log: options.log ?? createLogger('silent'),
    recorder: options.recorder,
    options: {
      compactionHeader: 'x-lembas-compaction',
      maxBodyBytes: 16 * 1024 * 1024,
      authSecret: options.authSecret,
    },
  })
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s))
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      ;(server as Server).closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await upstream.close()
    },
  }
}

describe('API keys are never written down', () => {
  const KEYS = {
    authorization: 'sk-test-CANARY-auth-4f1c9a77',
    apiKey: 'CANARY-api-key-header-0b9e',
    xApiKey: 'CANARY-x-api-key-header-d2c4',
  }
  const headers = {
    authorization: `Bearer ${KEYS.authorization}`,
    'api-key': KEYS.apiKey,
    'x-api-key': KEYS.xApiKey,
  }
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'lembas-secrets-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** A session with results, a recall round, a stream, failures of every kind; debug logging. */
  async function exercise(store: Store, name: string): Promise<{ logs: string; records: string }> {
    const lines: string[] = []
    const log = createLogger('debug', (line) => void lines.push(line))
    const recordDir = join(dir, `records-${name}`)
    const recorder = createRecorder(recordDir, { log })
    const upstream = await startFakeUpstream()
    const app = await startApp({ upstreamUrl: upstream.url, store, log, recorder })
    try {
      upstream.setScript(
        scriptedModel([
          { content: 'stored' },
          { calls: [{ name: 'recall', args: { id: '#0001' } }] },
          { content: 'recalled' },
          { content: 'streamed' },
        ]),
      )
      const first = withResults([{ id: 'c1', output: 'result one' }])
      assert.equal((await postChat(app.url, first, headers)).status, 200)
      first.messages.push({ role: 'assistant', content: 'stored' } as never)
      first.messages.push({ role: 'user', content: 'recall it' } as never)
      assert.equal((await postChat(app.url, first, headers)).status, 200)
      const streamed = withResults([{ id: 'c2', output: 'result two' }])
      assert.equal(
        (
          await postChat(
            app.url,
            { ...streamed, stream: true },
            { ...headers, 'x-session-id': 's' },
          )
        ).status,
        200,
      )
      // A body that names a key too, as some clients send it: the record redacts it.
      const named = { ...withResults([{ id: 'c3', output: 'three' }]), api_key: KEYS.authorization }
      upstream.setScript(() => ({ json: chatCompletion({ content: 'ok' }) }))
      assert.equal((await postChat(app.url, named, headers)).status, 200)
      // Failures are logged: a body that is not JSON around a key, an upstream error.
      const broken = `{"model":"m","api_key":${KEYS.apiKey},"messages":[]}`
      assert.equal((await postChat(app.url, broken, headers)).status, 400)
      upstream.setScript(() => ({ status: 500, body: 'upstream failed' }))
      assert.equal(
        (await postChat(app.url, withResults([{ id: 'c4', output: 'x' }]), headers)).status,
        500,
      )
      // An upstream whose error echoes the key it got, in the recall round of a stream.
      const recall = [{ id: 'r9', name: 'recall', arguments: ['{"id":"#0001"}'] }]
      const echo = `Incorrect API key provided: Bearer ${KEYS.authorization}`
      upstream.setScript((_request, index) =>
        index === upstream.requests.length - 1 &&
        _request.json.messages.at(-1).tool_call_id === 'r9'
          ? { status: 401, json: { error: { message: echo, type: 'invalid_request_error' } } }
          : { sse: chatChunks({ toolCalls: recall }) },
      )
      const echoed = await postChat(
        app.url,
        { ...withResults([{ id: 'c5', output: 'five' }]), stream: true },
        headers,
      )
      assert.match(echoed.text, /Incorrect API key/, 'the client gets the upstream’s message')
    } finally {
      await app.close()
      await recorder.close()
      await upstream.close()
    }
    assert.ok(chatRequests(upstream.requests).every((r: any) => r !== undefined))
    // The keys did reach the upstream: that is the proxy's job.
    assert.equal(upstream.requests[0]!.headers.authorization, headers.authorization)
    assert.equal(upstream.requests[0]!.headers['x-api-key'], KEYS.xApiKey)
    const records = readdirSync(recordDir)
      .map((file) => readFileSync(join(recordDir, file), 'utf8'))
      .join('')
    return { logs: lines.join(''), records }
  }

  function recordFiles(name: string): string[] {
    const recordDir = join(dir, `records-${name}`)
    return readdirSync(recordDir).map((file) => join(recordDir, file))
  }

  function assertNoKey(where: string, text: string): void {
    for (const key of Object.values(KEYS)) {
      assert.ok(!text.includes(key), `${where} holds ${key}`)
    }
    // Not even a piece of one: every key has this word in it.
    const at = text.indexOf('CANARY')
    assert.ok(at < 0, `${where} holds a piece of a key: ${text.slice(at - 60, at + 40)}`)
  }

  test('SQLite: not in the debug log, not in the --record output, not in the store file', async () => {
    const file = join(dir, 'store.db')
    const store = await createStore(`sqlite:${file}`, { idleTtlMs: DAY })
    const { logs, records } = await exercise(store, 'sqlite')
    await store.close()
    assert.match(logs, /"event":"request"/, 'the log was captured')
    assert.match(logs, /"event":"request-failed"/)
    assert.match(logs, /"event":"stream-failed"/)
    assert.match(records, /result one/, 'the records were captured')
    assert.match(records, /"api_key":"REDACTED"/)
    assertNoKey('the log', logs)
    assertNoKey('the records', records)
    // The database and whatever WAL or shared-memory files it left, byte by byte.
    const files = readdirSync(dir).filter((name) => name.startsWith('store.db'))
    assert.ok(files.includes('store.db'))
    // Readable by the proxy's user only, whatever the umask: every result and prompt is there.
    const modes = [...files.map((name) => join(dir, name)), recordFiles('sqlite')].flat()
    for (const path of modes) assert.equal(statSync(path).mode & 0o777, 0o600, path)
    assert.equal(statSync(join(dir, 'records-sqlite')).mode & 0o777, 0o700)
    for (const name of files) {
      const bytes = readFileSync(join(dir, name))
      if (name === 'store.db') assert.ok(bytes.includes('result one'), 'the results are stored')
      assertNoKey(name, bytes.toString('latin1'))
    }
  })

  test('Redis: not in any key or value', async () => {
    const redis = await startRedis()
    const store = await createStore(redis.url, { idleTtlMs: DAY })
    const client = new Redis(redis.url)
    try {
      const { logs } = await exercise(store, 'redis')
      assertNoKey('the log', logs)
      let dump = ''
      let cursor = '0'
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', 'lembas:*', 'COUNT', 1000)
        cursor = next
        for (const key of keys) {
          dump += key + '\n'
          const type = await client.type(key)
          if (type === 'hash') dump += JSON.stringify(await client.hgetall(key)) + '\n'
          else if (type === 'string') dump += (await client.get(key)) + '\n'
        }
      } while (cursor !== '0')
      assert.match(dump, /result one/, 'the results are stored')
      assertNoKey('Redis', dump)
    } finally {
      client.disconnect()
      await store.close()
      await redis.stop()
    }
  })
})

describe('headers', () => {
  let upstream: FakeUpstream
  let app: App
  before(async () => {
    upstream = await startFakeUpstream((request) =>
      request.pathname.endsWith('/models')
        ? { json: { object: 'list', data: [] } }
        : { json: chatCompletion({ content: 'ok' }) },
    )
    app = await startApp({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
    })
  })
  after(async () => {
    await app.close()
    await upstream.close()
  })

  test('hop-by-hop, proxy and client-address headers never reach the upstream, on any route', async () => {
    const hostile = {
      connection: 'keep-alive, x-named-hop, authorization-extra',
      'x-named-hop': 'dropped because Connection names it',
      'authorization-extra': 'x',
      'keep-alive': 'timeout=5',
      te: 'trailers',
      upgrade: 'h2c',
      trailer: 'x-later',
      // Node's client sends a Trailer header only with a chunked body.
      'transfer-encoding': 'chunked',
      'proxy-authorization': 'Basic cHJveHk6c2VjcmV0',
      'proxy-connection': 'keep-alive',
      'x-forwarded-for': '203.0.113.9',
      'x-forwarded-host': 'evil.example',
      'x-real-ip': '203.0.113.9',
      'x-lembas-auth': 'never forwarded',
      host: 'evil.example',
      // These do go through.
      authorization: 'Bearer sk-client',
      'x-custom': 'kept',
    }
    const chat = JSON.stringify(withResults([{ id: 'h1', output: 'out' }]))
    for (const [method, path, body] of [
      ['POST', '/v1/chat/completions', chat],
      ['GET', '/v1/models', undefined],
    ] as const) {
      upstream.requests.length = 0
      const reply = await rawRequest(app.url + path, method, hostile, body)
      assert.equal(reply.status, 200, reply.text)
      const got = upstream.requests[0]!.headers
      for (const name of [
        'x-named-hop',
        'authorization-extra',
        'keep-alive',
        'te',
        'upgrade',
        'trailer',
        'proxy-authorization',
        'proxy-connection',
        'x-forwarded-for',
        'x-forwarded-host',
        'x-real-ip',
        'x-lembas-auth',
      ]) {
        assert.equal(got[name], undefined, `${path}: ${name} reached the upstream`)
      }
      assert.doesNotMatch(String(got.connection ?? ''), /x-named-hop/)
      assert.notEqual(got.host, 'evil.example', `${path}: the client's Host`)
      assert.equal(got.authorization, 'Bearer sk-client')
      assert.equal(got['x-custom'], 'kept')
    }
  })
})

describe('tenants', () => {
  let upstream: FakeUpstream
  let app: App
  before(async () => {
    upstream = await startFakeUpstream()
    app = await startApp({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
    })
  })
  after(async () => {
    await app.close()
    await upstream.close()
  })

  test('another key with the same session id cannot continue the session: it starts its own', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { content: 'a1' },
        { content: 'b1' },
        { calls: [{ name: 'recall', args: { id: '#0001' } }] },
        { content: 'b2' },
        { content: 'a2' },
      ]),
    )
    const session = { 'x-session-id': 'shared-name' }
    const keyA = { ...session, authorization: 'Bearer tenant-A' }
    const keyB = { ...session, authorization: 'Bearer tenant-B' }
    const bodyA = withResults([{ id: 'a', output: 'A private' }])
    await postChat(app.url, bodyA, keyA)
    // B sends A's whole history under A's session name, plus a result of its own.
    const bodyB = structuredClone(bodyA)
    bodyB.messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'b', type: 'function', function: { name: 'Bash', arguments: '{}' } }],
      } as never,
      { role: 'tool', tool_call_id: 'b', content: 'B own' } as never,
    )
    await postChat(app.url, bodyB, keyB)
    await postChat(app.url, bodyB, keyB) // B asks for #0001: its own, not A's
    const bodyA2 = structuredClone(bodyA)
    bodyA2.messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'a2', type: 'function', function: { name: 'Bash', arguments: '{}' } }],
      } as never,
      { role: 'tool', tool_call_id: 'a2', content: 'A again' } as never,
    )
    await postChat(app.url, bodyA2, keyA)

    const [a1, b1, b2, recallRound, a2] = chatRequests(upstream.requests)
    assert.deepEqual(toolTexts(a1), ['[#0001]\nA private'])
    // A fresh session: B's copy of A's result is numbered in B's session, from #0001.
    assert.deepEqual(toolTexts(b1), ['[#0001]\nA private', '[#0002]\nB own'])
    assert.deepEqual(toolTexts(b2), toolTexts(b1))
    const recallAnswer = toolTexts(recallRound).at(-1)!
    assert.match(recallAnswer, /^\[#0003 recall #0001/)
    // A goes on with its own numbering: nothing B did took an id from it.
    assert.deepEqual(toolTexts(a2), ['[#0001]\nA private', '[#0002]\nA again'])
    assert.doesNotMatch(JSON.stringify(a2), /B own/)
  })

  test('a key in the URL (Gemini’s ?key=) is a tenant: another one cannot recall the session’s results', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { content: 'x' },
        { calls: [{ name: 'recall', args: { id: '#0001' } }] },
        { content: 'y' },
      ]),
    )
    const session = { 'x-session-id': 'url-keys' }
    const url = (key: string) => `${app.url}/v1/chat/completions?key=${key}`
    await postTo(url('KA'), withResults([{ id: 'q', output: 'URL-A secret' }]), session)
    const other = await postTo(
      url('KB'),
      { model: 'm', tools: TOOLS, messages: [{ role: 'user', content: 'recall #0001' }] },
      session,
    )
    assert.equal(other.status, 200)
    const requests = upstream.requests.filter((r) => r.pathname.endsWith('/chat/completions'))
    assert.deepEqual(
      requests.map((r) => new URL(r.path, 'http://x').searchParams.get('key')),
      ['KA', 'KB', 'KB'],
      'each key goes upstream as it came',
    )
    const recallAnswer = chatRequests(upstream.requests).at(-1).messages.at(-1)
    assert.match(recallAnswer.content, /No stored result #0001 in this session\./)
    assert.doesNotMatch(JSON.stringify(chatRequests(upstream.requests).slice(1)), /URL-A secret/)
  })

  test('without any key, a session is not shared with a keyed client', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { content: 'x' },
        { calls: [{ name: 'recall', args: { id: '#0001' } }] },
        { content: 'y' },
      ]),
    )
    await postChat(app.url, withResults([{ id: 'k', output: 'keyed secret' }]), {
      authorization: 'Bearer tenant-K',
      'x-session-id': 'k',
    })
    const anonymous = await fetch(app.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'k' },
      body: JSON.stringify({
        model: 'm',
        tools: TOOLS,
        messages: [{ role: 'user', content: 'recall #0001' }],
      }),
    })
    assert.equal(anonymous.status, 200)
    const recallAnswer = chatRequests(upstream.requests).at(-1).messages.at(-1)
    assert.match(recallAnswer.content, /No stored result #0001 in this session\./)
    assert.doesNotMatch(JSON.stringify(chatRequests(upstream.requests).slice(1)), /keyed secret/)
  })
})

describe('workspace confinement through the pipeline', () => {
  let base: string
  let root: string
  let upstream: FakeUpstream
  let app: App
  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'lembas-confine-'))
    root = join(base, 'project')
    mkdirSync(root)
    writeFileSync(join(base, 'canary.txt'), 'outside 1\noutside 2\n')
    writeFileSync(join(root, 'inside.txt'), 'inside 1\ninside 2\n')
    symlinkSync(join(base, 'canary.txt'), join(root, 'link-out'))
    upstream = await startFakeUpstream()
    app = await startApp({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      workspace: await createWorkspace([root]),
    })
  })
  after(async () => {
    await app.close()
    await upstream.close()
    rmSync(base, { recursive: true, force: true })
  })

  test('reads outside the root (.., absolute, symlink out, /proc) go blind: no hash, no length', async () => {
    const numbered = (text: string) =>
      text
        .split('\n')
        .map((line, i) => `${String(i + 1).padStart(6)}→${line}`)
        .join('\n')
    const paths = [
      join(root, 'inside.txt'),
      join(root, '..', 'canary.txt'),
      join(base, 'canary.txt'),
      join(root, 'link-out'),
      '/proc/self/environ',
      '/proc/self/cwd/package.json',
    ]
    const body = withResults(
      paths.map((path, i) => ({
        id: `r${i}`,
        name: 'Read',
        args: { file_path: path },
        output: numbered(path.includes('inside') ? 'inside 1\ninside 2' : 'outside 1\noutside 2'),
      })),
    )
    upstream.requests.length = 0
    assert.equal((await postChat(app.url, body)).status, 200)
    const [inside, ...outside] = toolTexts(chatRequests(upstream.requests)[0]!)
    assert.match(inside!, /^\[#0001 \S+inside\.txt lines 1-2 of 2 sha [0-9a-f]{8}\]/)
    assert.equal(outside.length, paths.length - 1)
    for (const [i, text] of outside.entries()) {
      const bracket = text.split('\n')[0]!
      assert.doesNotMatch(bracket, /sha [0-9a-f]|of \d+/, `${paths[i + 1]} was read: ${bracket}`)
      assert.match(bracket, /^\[#000\d /)
    }
  })
})

describe('the shared secret (--auth)', () => {
  const SECRET = 'lembas-shared-CANARY-secret-91'
  let upstream: FakeUpstream
  let app: App
  before(async () => {
    upstream = await startFakeUpstream((request: RecordedRequest) =>
      request.pathname.endsWith('/models')
        ? { json: { object: 'list', data: [] } }
        : { json: chatCompletion({ content: 'ok' }) },
    )
    app = await startApp({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      authSecret: SECRET,
    })
  })
  after(async () => {
    await app.close()
    await upstream.close()
  })

  test('401 in the OpenAI shape without it or with a wrong one, on every route but healthz', async () => {
    const body = withResults([{ id: 'a', output: 'out' }])
    for (const given of [undefined, 'wrong', SECRET.slice(0, -1), SECRET + 'x', '']) {
      const headers: Record<string, string> = given === undefined ? {} : { 'x-lembas-auth': given }
      const chat = await postChat(app.url, body, headers)
      assert.equal(chat.status, 401, `chat with ${given}`)
      assert.equal(chat.json.error.code, 'unauthorized')
      assert.equal(chat.json.error.type, 'invalid_request_error')
      assert.match(chat.json.error.message, /x-lembas-auth/)
      const models = await fetch(app.url + '/v1/models', { headers })
      assert.equal(models.status, 401)
      const unknown = await fetch(app.url + '/nowhere', { headers })
      assert.equal(unknown.status, 401)
    }
    // The upstream's own Authorization is not the proxy's secret.
    const bearer = await postChat(app.url, body, { authorization: `Bearer ${SECRET}` })
    assert.equal(bearer.status, 401)
    assert.equal(upstream.requests.length, 0)
    const health = await fetch(app.url + '/healthz')
    assert.equal(health.status, 200)
  })

  test('a web page of another site is refused on every door, with the secret too: 403 in its shape', async () => {
    upstream.requests.length = 0
    const crossSite = { 'x-lembas-auth': SECRET, 'sec-fetch-site': 'cross-site' }
    const chat = await postChat(app.url, withResults([{ id: 'a', output: 'out' }]), crossSite)
    assert.equal(chat.status, 403)
    assert.equal(chat.json.error.code, 'forbidden')
    const messages = await fetch(app.url + '/v1/messages', {
      method: 'POST',
      // A simple request: no CORS preflight asks first.
      headers: { 'content-type': 'text/plain', ...crossSite },
      body: '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}',
    })
    assert.equal(messages.status, 403)
    assert.equal(((await messages.json()) as any).error.type, 'permission_error')
    assert.equal((await fetch(app.url + '/v1/models', { headers: crossSite })).status, 403)
    assert.equal(upstream.requests.length, 0)
    // The same page's own requests (the dashboard) and every agent (no such header) go on.
    const same = await fetch(app.url + '/v1/models', {
      headers: { 'x-lembas-auth': SECRET, 'sec-fetch-site': 'same-origin' },
    })
    assert.equal(same.status, 200)
  })

  test('200 with it, and the secret never reaches the upstream; Authorization passes unchanged', async () => {
    upstream.requests.length = 0
    const headers = { 'x-lembas-auth': SECRET, authorization: 'Bearer upstream-key' }
    const chat = await postChat(app.url, withResults([{ id: 'b', output: 'out' }]), headers)
    assert.equal(chat.status, 200)
    const models = await fetch(app.url + '/v1/models', { headers })
    assert.equal(models.status, 200)
    assert.equal(upstream.requests.length, 2)
    for (const request of upstream.requests) {
      assert.equal(request.headers.authorization, 'Bearer upstream-key')
      assert.ok(!JSON.stringify(request.headers).includes(SECRET), 'in the headers')
      assert.ok(!request.body.includes(SECRET), 'in the body')
    }
  })
})

describe('the command line: loopback by default, --auth', () => {
  let upstream: FakeUpstream
  before(async () => {
    upstream = await startFakeUpstream()
  })
  after(async () => {
    await upstream.close()
  })

  test('bound beyond loopback it warns, unless a shared secret is set; LEMBAS_AUTH is its twin', async () => {
    const base = [
      '--port',
      '0',
      '--upstream',
      upstream.url,
      '--store',
      'memory:',
      '--host',
      '0.0.0.0',
    ]
    const started: Running[] = []
    try {
      const start = async (args: string[], env?: Record<string, string>) => {
        const running = await startCli(args, env)
        started.push(running)
        return running
      }
      const open = await start(base)
      const guarded = await start([...base, '--auth', 'cli-secret'])
      const fromEnv = await start(base, { LEMBAS_AUTH: 'env-secret' })
      const wait = () => new Promise((resolve) => setTimeout(resolve, 300))
      await wait()
      assert.match(open.stderr(), /listening-beyond-loopback/)
      assert.doesNotMatch(guarded.stderr(), /listening-beyond-loopback/)
      assert.doesNotMatch(fromEnv.stderr(), /listening-beyond-loopback/)
      const body = withResults([{ id: 'c', output: 'out' }])
      assert.equal((await postChat(guarded.url, body)).status, 401)
      assert.equal(
        (await postChat(guarded.url, body, { 'x-lembas-auth': 'cli-secret' })).status,
        200,
      )
      assert.equal(
        (await postChat(fromEnv.url, body, { 'x-lembas-auth': 'cli-secret' })).status,
        401,
      )
      assert.equal(
        (await postChat(fromEnv.url, body, { 'x-lembas-auth': 'env-secret' })).status,
        200,
      )
      assert.ok(
        upstream.requests.every((r) => !JSON.stringify(r.headers).includes('secret')),
        'the secret never reached the upstream',
      )
      assert.doesNotMatch(guarded.stderr() + fromEnv.stderr(), /cli-secret|env-secret/)
    } finally {
      await Promise.all(started.map(stopCli))
    }
  })

  test('on loopback a Host that names no local name is refused (DNS rebinding), on every door; --allowed-hosts adds names', async () => {
    const base = ['--port', '0', '--upstream', upstream.url, '--store', 'memory:']
    const started: Running[] = []
    try {
      const start = async (args: string[]) => {
        const running = await startCli(args)
        started.push(running)
        return running
      }
      const plain = await start(base)
      const listed = await start([...base, '--allowed-hosts', 'Proxy.LAN, .corp.example'])
      const anyName = await start([...base, '--allowed-hosts', '*'])
      const wide = await start([...base, '--host', '0.0.0.0'])
      const port = (running: Running) => new URL(running.url).port
      const chat = JSON.stringify(withResults([{ id: 'h', output: 'out' }]))
      const ask = (running: Running, host: string, path = '/v1/chat/completions') =>
        path === '/stats'
          ? rawRequest(running.url + path, 'GET', { host })
          : rawRequest(running.url + path, 'POST', { host }, chat)
      upstream.requests.length = 0
      // A page at attacker.example that resolved its name to 127.0.0.1.
      for (const host of ['attacker.example', '127.0.0.1.nip.io', '127.attacker.example']) {
        const refused = await ask(plain, `${host}:${port(plain)}`)
        assert.equal(refused.status, 403, host)
        const error = JSON.parse(refused.text).error
        assert.equal(error.code, 'forbidden')
        assert.match(error.message, /--allowed-hosts/)
      }
      const messages = await rawRequest(
        plain.url + '/v1/messages',
        'POST',
        { host: 'attacker.example' },
        '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}',
      )
      assert.equal(messages.status, 403)
      assert.equal(JSON.parse(messages.text).error.type, 'permission_error')
      assert.equal((await ask(plain, 'attacker.example', '/stats')).status, 403)
      assert.equal(upstream.requests.length, 0, 'nothing reached the upstream')
      // The names an agent on this machine uses.
      for (const host of [
        `127.0.0.1:${port(plain)}`,
        `localhost:${port(plain)}`,
        `LOCALHOST.:${port(plain)}`,
        `[::1]:${port(plain)}`,
        `${hostname()}:${port(plain)}`,
        'app.localhost',
        'host.docker.internal',
      ])
        assert.equal((await ask(plain, host)).status, 200, host)
      assert.equal((await ask(plain, 'proxy.lan')).status, 403)
      for (const host of ['proxy.lan:1', 'corp.example', 'a.b.corp.example', 'localhost'])
        assert.equal((await ask(listed, host)).status, 200, host)
      for (const host of ['xcorp.example', 'attacker.example'])
        assert.equal((await ask(listed, host)).status, 403, host)
      assert.equal((await ask(anyName, 'attacker.example')).status, 200)
      // Bound beyond loopback, clients come by names the proxy cannot know.
      assert.equal((await ask(wide, 'proxy.example.com')).status, 200)
      const refusals = plain.stderr().match(/"host-refused"/g) ?? []
      assert.equal(refusals.length, 4, 'one warning for each name')
    } finally {
      await Promise.all(started.map(stopCli))
    }
  })
})

// ── helpers ──

function rawRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const all = body === undefined ? headers : { ...headers, 'content-type': 'application/json' }
    const request = httpRequest(url, { method, headers: all, setHost: false }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }))
    })
    request.on('error', reject)
    request.end(body)
  })
}

async function stopCli(running: Running): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return
  const exited = once(running.child, 'exit')
  running.child.kill('SIGTERM')
  await exited
}
