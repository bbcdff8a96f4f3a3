/**
 * A restart goes on from where the stopped process was: a proxy stopped gracefully hands the
 * fast path's states on through its store, and the next process's first request of each
 * session goes on from them instead of parsing the whole history, sending the upstream exactly
 * the bytes a whole parse would (checked against a proxy killed at the same point, which hands
 * nothing on). On every door, on SQLite and on Redis; a state of other settings is not used.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Agent, request } from 'undici'
import { startCli, startProxyCli, stopCli, type Running } from '../helpers/cli.js'
import { anthropicMessage } from '../helpers/fake-anthropic.js'
import { responsesJson } from '../helpers/fake-responses.js'
import { chatCompletion, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { promptBlock } from '../helpers/proxy.js'
import { startRedis, type TestRedis } from '../helpers/redis-server.js'

const FILE = Array.from({ length: 40 }, (_, i) => `line ${i + 1} of a.txt`).join('\n') + '\n'
/** Each step's command and output: the last re-reads a.txt (a stub, if the table came along). */
const STEPS = [
  ['cat a.txt', FILE],
  ['ls', 'a.txt\nb.txt\n'],
  ['seq 1 300', Array.from({ length: 300 }, (_, i) => String(i + 1)).join('\n')],
  ['cat a.txt', FILE],
] as const

interface Door {
  readonly name: string
  readonly path: string
  readonly headers: Record<string, string>
  /** The request after `done` steps' results. */
  body(done: number): unknown
}

/** Each door's session, named by `tag` (a store may hold sessions of earlier runs). */
function doorsOf(tag: string): readonly Door[] {
  const claudeSession = randomUUID()
  return [
    {
      name: 'chat',
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer resume-chat', 'x-session-id': `resume-chat-${tag}` },
      body: (done) => ({
        model: 'm',
        tools: [{ type: 'function', function: { name: 'Bash' } }],
        messages: [
          { role: 'system', content: 'You are an agent.' },
          { role: 'user', content: 'work' },
          ...STEPS.slice(0, done).flatMap(([command, output], i) => [
            {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: `call_${i}`,
                  type: 'function',
                  function: { name: 'Bash', arguments: JSON.stringify({ command }) },
                },
              ],
            },
            { role: 'tool', tool_call_id: `call_${i}`, content: output },
          ]),
        ],
      }),
    },
    {
      name: 'messages',
      path: '/v1/messages',
      headers: { 'x-api-key': 'sk-ant-resume' },
      body: (done) => ({
        model: 'claude-test',
        max_tokens: 1024,
        system: [{ type: 'text', text: 'You are Claude Code.' }],
        tools: [{ name: 'Bash', description: 'Runs a command', input_schema: { type: 'object' } }],
        metadata: { user_id: `user_abc_account__session_${claudeSession}` },
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'work' }] },
          ...STEPS.slice(0, done).flatMap(([command, output], i) => [
            {
              role: 'assistant',
              content: [{ type: 'tool_use', id: `toolu_${i}`, name: 'Bash', input: { command } }],
            },
            {
              role: 'user',
              content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: output }],
            },
          ]),
        ],
      }),
    },
    {
      name: 'responses',
      path: '/v1/responses',
      headers: { authorization: 'Bearer resume-codex' },
      // As Codex sends it: no instructions, its prompt a developer message (the block after it).
      body: (done) => ({
        model: 'gpt-test',
        tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' } }],
        prompt_cache_key: `resume-codex-${tag}`,
        input: [
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Codex.' }] },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'work' }] },
          ...STEPS.slice(0, done).flatMap(([command, output], i) => [
            {
              type: 'function_call',
              call_id: `call_${i}`,
              name: 'shell',
              arguments: JSON.stringify({ command: ['bash', '-lc', command] }),
            },
            { type: 'function_call_output', call_id: `call_${i}`, output },
          ]),
        ],
      }),
    },
  ]
}

/** Answers each door in its own shape, with text only. */
function upstreamOfDoors(): Promise<FakeUpstream> {
  return startFakeUpstream((request) => {
    if (request.pathname.endsWith('/messages'))
      return { json: anthropicMessage([{ type: 'text', text: 'ok' }]) }
    if (request.pathname.endsWith('/responses'))
      return {
        json: responsesJson('resp_1', [
          {
            type: 'message',
            id: 'msg_1',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'ok', annotations: [] }],
          },
        ]),
      }
    return { json: chatCompletion({ content: 'ok' }) }
  })
}

/** Sends the door's request after `done` results, on a connection of its own when `fresh`. */
async function send(proxy: Running, door: Door, done: number, fresh = false): Promise<void> {
  const dispatcher = fresh ? new Agent() : undefined
  try {
    const response = await request(proxy.url + door.path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...door.headers },
      body: JSON.stringify(door.body(done)),
      ...(dispatcher ? { dispatcher } : {}),
    })
    const text = await response.body.text()
    assert.equal(response.statusCode, 200, text)
  } finally {
    await dispatcher?.close()
  }
}

/** The proxy's log events of one kind. */
function events(proxy: Running, kind: string): any[] {
  return proxy
    .stderr()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .filter((line) => line.event === kind)
}

const INFO = { LEMBAS_LOG_LEVEL: 'info' }
/** A process that never saves its states: killed, it leaves nothing behind. */
const NO_SAVES = ['--save-states-s', '0']

/**
 * Every door's session up to its third result on one process, stopped with `signal`; then the
 * fourth request on a new process. What the upstream got for each door's fourth request, and
 * the new process.
 */
async function restartedSessions(
  store: string,
  signal: NodeJS.Signals,
  doors: readonly Door[],
  more: string[] = [],
  { firstMore = [], settleMs = 0 }: { firstMore?: string[]; settleMs?: number } = {},
) {
  const upstream = await upstreamOfDoors()
  const first = await startProxyCli(upstream.url, store, [...more, ...firstMore])
  for (const door of doors) for (let done = 1; done <= 3; done++) await send(first, door, done)
  // Time for the first process's background saves, when it makes them.
  await new Promise((resolve) => setTimeout(resolve, settleMs))
  await stopCli(first, signal)
  const before = upstream.requests.length
  const second = await startCli(
    ['--port', '0', '--upstream', upstream.url, '--store', store, ...more],
    INFO,
  )
  try {
    for (const door of doors) await send(second, door, 4)
    await stopCli(second)
    return { sent: upstream.requests.slice(before).map((r) => r.body), second }
  } finally {
    await stopCli(second)
    await upstream.close()
  }
}

let dir: string
let redis: TestRedis
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lembas-resume-'))
  redis = await startRedis()
})
after(async () => {
  await redis.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** A store of its own for `name`: a SQLite file, or Redis database `db`. */
function storeOf(backend: 'sqlite' | 'redis', name: string, db: number): string {
  if (backend === 'sqlite') return `sqlite:${join(dir, name + '.db')}`
  const url = new URL(redis.url)
  url.pathname = `/${db}`
  return url.href
}

for (const backend of ['sqlite', 'redis'] as const) {
  test(`after a graceful stop, every door goes on from where it was (${backend}): same bytes as a whole parse`, async () => {
    // The same sessions on two stores: one handed on, one not.
    const doors = doorsOf(randomUUID())
    const handed = await restartedSessions(storeOf(backend, 'handed', 1), 'SIGTERM', doors)
    const killed = await restartedSessions(storeOf(backend, 'killed', 2), 'SIGKILL', doors, [], {
      firstMore: NO_SAVES,
    })

    const taken = events(handed.second, 'sessions-taken-on')
    assert.equal(taken.length, 1)
    assert.equal(taken[0].sessions, 3, 'one state a door')
    const spliced = (proxy: Running) => events(proxy, 'request').map((line) => line.spliced)
    assert.deepEqual(spliced(handed.second), [1, 1, 1], 'each door on the fast path at once')
    assert.deepEqual(spliced(killed.second), [0, 0, 0], 'nothing handed on: the full path')
    assert.equal(events(killed.second, 'sessions-taken-on').length, 0)

    assert.equal(handed.sent.length, 3)
    for (const [i, door] of ['chat', 'messages', 'responses'].entries()) {
      assert.equal(handed.sent[i], killed.sent[i], `${door}: the same bytes upstream`)
      assert.match(handed.sent[i]!, /Unchanged since #0001/, `${door}: the re-read is a stub`)
    }
    const codex = JSON.parse(handed.sent[2]!)
    assert.equal(codex.input[1].content[0].text, promptBlock, 'the block after the prompt')
  })
}

for (const backend of ['sqlite', 'redis'] as const) {
  test(`after a crash, every door goes on from the last save (${backend}): same bytes as a whole parse`, async () => {
    const doors = doorsOf(randomUUID())
    // Saves every second, then killed two and a half seconds after its last request.
    const saved = await restartedSessions(storeOf(backend, 'saved', 3), 'SIGKILL', doors, [], {
      firstMore: ['--save-states-s', '1'],
      settleMs: 2500,
    })
    const killed = await restartedSessions(storeOf(backend, 'unsaved', 4), 'SIGKILL', doors, [], {
      firstMore: NO_SAVES,
    })
    const spliced = (proxy: Running) => events(proxy, 'request').map((line) => line.spliced)
    assert.deepEqual(spliced(saved.second), [1, 1, 1], 'each door on the fast path at once')
    assert.deepEqual(spliced(killed.second), [0, 0, 0], 'nothing saved: the full path')
    assert.equal(events(saved.second, 'sessions-taken-on').length, 0, 'nothing was handed on')
    assert.deepEqual(
      events(saved.second, 'states-restored').map((line) => line.sessions),
      [1, 1, 1],
      'one save a door, read when its request came',
    )
    for (const [i, door] of ['chat', 'messages', 'responses'].entries()) {
      assert.equal(saved.sent[i], killed.sent[i], `${door}: the same bytes upstream`)
      assert.match(saved.sent[i]!, /Unchanged since #0001/, `${door}: the re-read is a stub`)
    }
  })
}

test('a save of other settings is not used, and a process that saves nothing restores nothing', async () => {
  const store = `sqlite:${join(dir, 'saves-settings.db')}`
  const upstream = await upstreamOfDoors()
  const [door] = doorsOf(randomUUID())
  try {
    const first = await startProxyCli(upstream.url, store, ['--save-states-s', '1'])
    for (let done = 1; done <= 3; done++) await send(first, door!, done)
    await new Promise((resolve) => setTimeout(resolve, 2500))
    await stopCli(first, 'SIGKILL')
    const args = ['--port', '0', '--upstream', upstream.url, '--store', store]
    // --elide changes what goes upstream: the saved state is not this process's.
    const other = await startCli([...args, '--elide'], INFO)
    await send(other, door!, 4)
    await stopCli(other, 'SIGKILL')
    const off = await startCli([...args, ...NO_SAVES], INFO)
    await send(off, door!, 4)
    await stopCli(off, 'SIGKILL')
    const same = await startCli(args, INFO)
    await send(same, door!, 4)
    await stopCli(same, 'SIGKILL')
    const spliced = (proxy: Running) => events(proxy, 'request').map((line) => line.spliced)
    assert.deepEqual(
      [spliced(other), spliced(off), spliced(same)],
      [[0], [0], [1]],
      'only the same settings, saving on, go on from the save',
    )
  } finally {
    await upstream.close()
  }
})

test('a closed terminal (SIGHUP) stops as gracefully: the next process goes on', async () => {
  const doors = doorsOf(randomUUID())
  const hung = await restartedSessions(`sqlite:${join(dir, 'hup.db')}`, 'SIGHUP', doors)
  assert.equal(events(hung.second, 'sessions-taken-on')[0]?.sessions, 3)
  assert.deepEqual(
    events(hung.second, 'request').map((line) => line.spliced),
    [1, 1, 1],
  )
})

test('with --elide, a restart that goes on from handed-on or saved states sends what a whole parse does', async () => {
  const doors = doorsOf(randomUUID())
  // Every old result is worth a batch: batches are decided on either side of the restart.
  const elide = ['--elide', '--elide-threshold', '1', '--elide-horizon', '1000']
  const handed = await restartedSessions(
    `sqlite:${join(dir, 'elide-h.db')}`,
    'SIGTERM',
    doors,
    elide,
  )
  const killed = await restartedSessions(
    `sqlite:${join(dir, 'elide-k.db')}`,
    'SIGKILL',
    doors,
    elide,
    { firstMore: NO_SAVES },
  )
  assert.equal(events(handed.second, 'sessions-taken-on')[0]?.sessions, 3)
  // And killed after a save: the next process goes on from the saved states.
  const saved = await restartedSessions(
    `sqlite:${join(dir, 'elide-s.db')}`,
    'SIGKILL',
    doors,
    elide,
    { firstMore: ['--save-states-s', '1'], settleMs: 2500 },
  )
  assert.deepEqual(
    events(saved.second, 'request').map((line) => line.spliced),
    [1, 1, 1],
  )
  for (const [i, door] of ['chat', 'messages', 'responses'].entries()) {
    assert.equal(handed.sent[i], killed.sent[i], `${door}: the same bytes upstream`)
    assert.equal(saved.sent[i], killed.sent[i], `${door}: from the save, the same bytes`)
    assert.match(handed.sent[i]!, /Elided; recall shows it/, `${door}: a batch applies`)
  }
})

test('states handed on by other settings are dropped unused, and taken on only once', async () => {
  const store = `sqlite:${join(dir, 'settings.db')}`
  const upstream = await upstreamOfDoors()
  const [door] = doorsOf(randomUUID())
  try {
    const first = await startProxyCli(upstream.url, store)
    for (let done = 1; done <= 3; done++) await send(first, door!, done)
    await stopCli(first)
    const args = ['--port', '0', '--upstream', upstream.url, '--store', store]
    // --elide changes what goes upstream: its states would not be this process's.
    const other = await startCli([...args, '--elide'], INFO)
    await stopCli(other)
    assert.deepEqual(
      events(other, 'sessions-taken-on').map((e) => [e.sessions, e.stale]),
      [[0, 1]],
    )
    const again = await startCli(args, INFO)
    await send(again, door!, 4)
    await stopCli(again)
    assert.equal(events(again, 'sessions-taken-on').length, 0, 'nothing left to take on')
    assert.deepEqual(
      events(again, 'request').map((line) => line.spliced),
      [0],
    )
  } finally {
    await upstream.close()
  }
})

test('what a stop hands on holds no key: not from the headers, not from a body that names one', async () => {
  const key = 'sk-test-CANARY-resume-7f3e'
  const upstream = await upstreamOfDoors()
  const file = join(dir, 'keys.db')
  const proxy = await startCli(
    ['--port', '0', '--upstream', upstream.url, '--store', `sqlite:${file}`],
    INFO,
  )
  try {
    const door: Door = {
      ...doorsOf(randomUUID())[0]!,
      headers: { authorization: `Bearer ${key}`, 'x-api-key': key, 'x-session-id': 'keys' },
    }
    const body = door.body
    const named: Door = { ...door, body: (done) => ({ ...(body(done) as object), api_key: key }) }
    for (let done = 1; done <= 3; done++) await send(proxy, named, done)
  } finally {
    await stopCli(proxy)
    await upstream.close()
  }
  assert.equal(events(proxy, 'sessions-handed-on')[0]?.sessions, 1, 'a state was handed on')
  for (const name of readdirSync(dir).filter((name) => name.startsWith('keys.db'))) {
    const bytes = readFileSync(join(dir, name))
    assert.equal(bytes.indexOf('CANARY'), -1, `${name} holds a piece of the key`)
  }
})

test('--workers 2: each worker hands on what it remembers and the one in its place takes it on', async () => {
  const upstream = await upstreamOfDoors()
  const store = `sqlite:${join(dir, 'workers.db')}`
  const args = ['--port', '0', '--upstream', upstream.url, '--store', store, '--workers', '2']
  const doors = Array.from({ length: 8 }, () => doorsOf(randomUUID())[0]!)
  /** The log events of `kind` once `count` of them came (the workers start one by one). */
  const awaited = async (proxy: Running, kind: string, count: number) => {
    for (let i = 0; i < 100 && events(proxy, kind).length < count; i++)
      await new Promise((resolve) => setTimeout(resolve, 100))
    return events(proxy, kind).map((e) => e.sessions as number)
  }
  try {
    const first = await startCli(args, INFO)
    // Sessions at once, each request on a connection of its own: round robin over the workers.
    await Promise.all(
      doors.map(async (door) => {
        for (let done = 1; done <= 2; done++) await send(first, door, done, true)
      }),
    )
    await stopCli(first)
    const handed = events(first, 'sessions-handed-on').map((e) => e.sessions as number)
    const second = await startCli(args, INFO)
    const taken = await awaited(second, 'sessions-taken-on', handed.length)
    await stopCli(second)
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
    assert.ok(handed.length >= 1 && handed.length <= 2, `handed on by ${handed.length} workers`)
    assert.deepEqual(taken.sort(), handed.sort(), 'each worker took on what its place handed on')
    assert.ok(sum(handed) >= doors.length, `every session is remembered somewhere: ${handed}`)
  } finally {
    await upstream.close()
  }
})
