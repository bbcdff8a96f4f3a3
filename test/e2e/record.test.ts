/**
 * `--record DIR`: the real command line, recording a session's requests as received and as sent,
 * with no header and no key in the file; and the recording replayed by `lembas-proxy replay`.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { parseCommandLine } from '../../src/config/flags.js'
import { createLogger } from '../../src/log.js'
import { createRecorder, redactedJson, REDACTED } from '../../src/record/recorder.js'
import { runReplay } from '../../src/replay/command.js'
import { chatCompletion, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { startCli } from '../helpers/cli.js'

const HEADER_KEY = 'sk-header-0123456789abcdef'
const BODY_KEY = 'sk-body-fedcba9876543210'
const NESTED_KEY = 'nested-secret-value-42'

function request(messages: unknown[]) {
  return {
    model: 'm',
    api_key: BODY_KEY,
    metadata: { apiKey: NESTED_KEY, user: 'me' },
    messages,
    tools: [{ type: 'function', function: { name: 'read', parameters: { type: 'object' } } }],
  }
}

describe('lembas-proxy --record DIR', () => {
  let upstream: FakeUpstream
  let dir: string
  before(async () => {
    upstream = await startFakeUpstream(() => ({ json: chatCompletion({ content: 'ok' }) }))
    dir = mkdtempSync(join(tmpdir(), 'lembas-record-'))
  })
  after(async () => {
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('writes each request as received and as sent, with no header and no key', async () => {
    const records = join(dir, 'records')
    const cli = await startCli([
      '--port',
      '0',
      '--upstream',
      upstream.url,
      '--store',
      'memory:',
      '--record',
      records,
    ])
    const file = 'a.ts'
    const first = [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'read a.ts' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: 'read', arguments: JSON.stringify({ filePath: file }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '1: export const a = 1' },
    ]
    const second = [
      ...first,
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          {
            id: 'c2',
            type: 'function',
            function: { name: 'read', arguments: JSON.stringify({ filePath: file }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c2', content: '1: export const a = 1' },
    ]
    try {
      for (const messages of [first, second]) {
        const response = await fetch(cli.url + '/v1/chat/completions', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${HEADER_KEY}`,
            'x-session-id': 'record-test',
          },
          body: JSON.stringify(request(messages)),
        })
        assert.equal(response.status, 200)
        await response.text()
      }
    } finally {
      const exited = once(cli.child, 'exit')
      cli.child.kill('SIGTERM')
      await exited
    }
    // The key did reach the upstream: recording changes nothing on the wire.
    assert.equal(upstream.requests.at(-1)!.headers.authorization, `Bearer ${HEADER_KEY}`)

    const files = readdirSync(records)
    assert.equal(files.length, 1)
    assert.match(files[0]!, /^\d{4}-\d{2}-\d{2}-\d+\.jsonl$/)
    const text = readFileSync(join(records, files[0]!), 'utf8')
    for (const secret of [HEADER_KEY, BODY_KEY, NESTED_KEY, 'Bearer'])
      assert.ok(!text.includes(secret), `${secret} is in the recording`)
    const lines = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    assert.equal(lines.length, 2)
    for (const line of lines) {
      assert.deepEqual(Object.keys(line), ['at', 'door', 'session', 'received', 'sent'])
      assert.ok(!Number.isNaN(Date.parse(line.at)))
      assert.equal(typeof line.session, 'string')
      assert.equal(line.received.api_key, REDACTED)
      assert.equal(line.received.metadata.apiKey, REDACTED)
      assert.equal(line.received.metadata.user, 'me')
      assert.equal(line.sent.api_key, REDACTED)
      assert.equal(line.sent.tools.at(-1).function.name, 'recall')
    }
    assert.equal(lines[0].session, lines[1].session)
    assert.deepEqual(lines[1].received.messages, second)
    assert.match(
      lines[1].sent.messages.at(-1).content,
      /^\[#0002 a\.ts lines 1-1\] Unchanged since #0001/,
    )

    // The recording replays: one session, the proxy's second request keeps the first whole.
    const report = JSON.parse(await runReplay(['--json', join(records, files[0]!)]))
    assert.equal(report.sessions.length, 1)
    assert.equal(report.total.requests, 2)
    assert.equal(report.total.failed, 0)
    assert.equal(report.sessions[0].requests[1].sides.proxy.kept, 1)
    assert.equal(report.total.actions.stubs, 1)
  })

  test('LEMBAS_RECORD is its twin; by default nothing is recorded', () => {
    const env = { LEMBAS_RECORD: '/tmp/somewhere' }
    const parsed = parseCommandLine([], env)
    assert.equal(parsed.kind === 'run' && parsed.config.record, '/tmp/somewhere')
    const flag = parseCommandLine(['--record', '/tmp/other'], env)
    assert.equal(flag.kind === 'run' && flag.config.record, '/tmp/other')
    const none = parseCommandLine([], {})
    assert.equal(none.kind === 'run' && none.config.record, '')
  })
})

describe('the recorder', () => {
  test('never throws into the request path, and a closed recorder ignores records', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lembas-recorder-'))
    const logged: string[] = []
    try {
      const recorder = createRecorder(join(dir, 'a', 'b'), {
        log: createLogger('warn', (line) => logged.push(line)),
        now: () => new Date('2026-03-04T05:06:07Z'),
      })
      assert.equal(recorder.path, join(dir, 'a', 'b', `2026-03-04-${process.pid}.jsonl`))
      recorder.record({
        door: 'chat',
        session: 's',
        received: '{"authorization":"Bearer x","n":1}',
        sent: '{\n"n":2}',
      })
      recorder.record({
        door: 'chat',
        session: undefined,
        received: 'not json, "api_key": "k1"',
        sent: '{}',
      })
      await recorder.close()
      recorder.record({ door: 'messages', session: 's', received: '{}', sent: '{}' })
      await recorder.close()
      const lines = readFileSync(recorder.path, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
      assert.deepEqual(lines, [
        {
          at: '2026-03-04T05:06:07.000Z',
          door: 'chat',
          session: 's',
          received: { authorization: REDACTED, n: 1 },
          sent: { n: 2 },
        },
        {
          at: '2026-03-04T05:06:07.000Z',
          door: 'chat',
          session: null,
          received: `not json, "api_key": "${REDACTED}"`,
          sent: {},
        },
      ])

      // A folder that cannot be made stops start-up; a file that cannot be opened is logged, and
      // records go on being ignored without a throw.
      const blocked = join(dir, 'blocked')
      writeFileSync(blocked, '')
      assert.throws(() => createRecorder(join(blocked, 'x')))
      const unopenable = join(dir, 'c')
      mkdirSync(join(unopenable, `2026-03-04-${process.pid}.jsonl`), { recursive: true })
      const broken = createRecorder(unopenable, {
        log: createLogger('warn', (line) => logged.push(line)),
        now: () => new Date('2026-03-04T05:06:07Z'),
      })
      await new Promise((resolve) => setTimeout(resolve, 50))
      broken.record({ door: 'chat', session: 's', received: '{}', sent: '{}' })
      await broken.close()
      assert.equal(logged.length, 1)
      assert.equal(JSON.parse(logged[0]!).event, 'record-failed')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('redaction: only string fields named like a credential, anywhere in the body', () => {
    const body = JSON.stringify({
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'my "api_key": "visible in text"' }],
      extra_body: { 'x-api-key': 'k', client_secret: 's', password: 'p', access_token: 't' },
      list: [{ Authorization: 'a' }, { apiKey: 5 }],
    })
    assert.deepEqual(JSON.parse(redactedJson(body)), {
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'my "api_key": "visible in text"' }],
      extra_body: {
        'x-api-key': REDACTED,
        client_secret: REDACTED,
        password: REDACTED,
        access_token: REDACTED,
      },
      list: [{ Authorization: REDACTED }, { apiKey: 5 }],
    })
    // A list of keys, a bare token: each string replaced; max_tokens and friends stay.
    const more = JSON.stringify({
      max_tokens: 5,
      stop_tokens: ['a'],
      api_keys: ['k1', 'k2'],
      token: 't',
      id_token: 'i',
    })
    assert.deepEqual(JSON.parse(redactedJson(more)), {
      max_tokens: 5,
      stop_tokens: ['a'],
      api_keys: [REDACTED, REDACTED],
      token: REDACTED,
      id_token: REDACTED,
    })
    // A body with no such name is written as it came, on one line.
    assert.equal(redactedJson('{"a":\n1}'), '{"a": 1}')
    // An escaped name is found too.
    assert.equal(redactedJson('{"\\u0061pi_key":"k"}'), `{"api_key":"${REDACTED}"}`)
  })
})
