/**
 * Stopping the real command line (`lembas-proxy` in a child process) while requests are under
 * way: what each client gets, and that the process ends.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, test } from 'node:test'
import { request } from 'undici'
import { startCli, startProxyCli, type Running } from '../helpers/cli.js'
import {
  chatChunks,
  chatCompletion,
  startFakeUpstream,
  type FakeUpstream,
} from '../helpers/fake-upstream.js'
import { anthropicEvents } from '../helpers/fake-anthropic.js'

/** A history with one tool result: the proxy stores it as #0001. */
function chatBody(stream = false) {
  return {
    model: 'm',
    stream,
    tools: [
      {
        type: 'function',
        function: {
          name: 'bash',
          description: 'Runs a command',
          parameters: { type: 'object', properties: { command: { type: 'string' } } },
        },
      },
    ],
    messages: [
      { role: 'user', content: 'list the files' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'a.ts\nb.ts\nc.ts' },
    ],
  }
}

function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  return request(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer k', ...headers },
    body: JSON.stringify(body),
  })
}

/** Resolves once the fake upstream has received `n` requests. */
async function received(upstream: FakeUpstream, n: number): Promise<void> {
  while (upstream.requests.length < n) await sleep(10)
}

async function exitOf(running: Running): Promise<number | null> {
  if (running.child.exitCode !== null) return running.child.exitCode
  const [code] = await once(running.child, 'exit')
  return code as number | null
}

describe('stopping with requests under way', () => {
  let upstream: FakeUpstream
  let dir: string
  before(async () => {
    upstream = await startFakeUpstream()
    dir = mkdtempSync(join(tmpdir(), 'lembas-stop-'))
  })
  after(async () => {
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('a request waiting on a stalled upstream gets a 503 it can retry once the grace is over', async () => {
    upstream.requests.length = 0
    upstream.setScript(() => ({ hang: true }))
    const proxy = await startProxyCli(upstream.url, `sqlite:${join(dir, 'a.db')}`, [
      '--stop-grace-s',
      '0.5',
    ])
    const answer = post(proxy.url, '/v1/chat/completions', chatBody())
    await received(upstream, 1)
    proxy.child.kill('SIGTERM')
    const response = await answer
    assert.equal(response.statusCode, 503)
    assert.equal(response.headers['retry-after'], '1')
    const body = (await response.body.json()) as { error: { code: string } }
    assert.equal(body.error.code, 'stopping')
    assert.equal(await exitOf(proxy), 0)
    assert.ok(upstream.requests[0]!.aborted, 'the upstream request was ended with it')
  })

  test('a second signal ends a stream at once with an error event in its API shape', async () => {
    upstream.requests.length = 0
    // The stream's first event, then nothing.
    upstream.setScript(() => ({
      sse: anthropicEvents([{ type: 'text', text: 'hi' }]),
      delayMs: 600_000,
    }))
    const proxy = await startProxyCli(upstream.url, `sqlite:${join(dir, 'b.db')}`, [
      '--stop-grace-s',
      '600',
    ])
    const body = {
      model: 'claude',
      max_tokens: 10,
      stream: true,
      tools: [{ name: 'Bash', description: 'Runs a command', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'list the files' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.ts' }] },
      ],
    }
    const response = await post(proxy.url, '/v1/messages', body, { 'x-api-key': 'k' })
    proxy.child.kill('SIGTERM')
    await sleep(200)
    assert.equal(proxy.child.exitCode, null, 'the first signal waits for the request')
    proxy.child.kill('SIGTERM')
    const text = await response.body.text()
    assert.match(text, /event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error"/)
    assert.equal(await exitOf(proxy), 0)
  })

  test('a recall round under way finishes: the store stays open until it is done', async () => {
    upstream.requests.length = 0
    upstream.setScript(async (_request, index) => {
      if (index > 0) return { json: chatCompletion({ content: 'the files are a, b and c' }) }
      await sleep(500)
      return {
        json: chatCompletion({
          toolCalls: [{ id: 'r1', name: 'recall', arguments: '{"id":"#0001"}' }],
        }),
      }
    })
    const proxy = await startProxyCli(upstream.url, `sqlite:${join(dir, 'c.db')}`)
    const answer = post(proxy.url, '/v1/chat/completions', chatBody())
    await received(upstream, 1)
    proxy.child.kill('SIGTERM')
    const response = await answer
    const text = await response.body.text()
    assert.equal(response.statusCode, 200, text)
    assert.equal(JSON.parse(text).choices[0].message.content, 'the files are a, b and c', text)
    const recalled = upstream.requests[1]!.json.messages.at(-1).content as string
    assert.match(recalled, /^\[#0002 recall #0001 lines 1-3 of 3\]\na\.ts/)
    assert.equal(await exitOf(proxy), 0)
  })

  test("a recall round waiting out the upstream's Retry-After gets the stop's error once the grace is over", async () => {
    upstream.requests.length = 0
    const recall = [{ id: 'r1', name: 'recall', arguments: '{"id":"#0001"}' }]
    upstream.setScript((request) => {
      // The recall round (its answer is the last message) is rate-limited for 10 s.
      if (request.json.messages.at(-1).tool_call_id === 'r1')
        return {
          status: 429,
          headers: { 'retry-after': '10' },
          json: { error: { message: 'Rate limit reached', type: 'requests' } },
        }
      return request.json.stream
        ? {
            sse: chatChunks({ toolCalls: recall.map((c) => ({ ...c, arguments: [c.arguments] })) }),
          }
        : { json: chatCompletion({ toolCalls: recall }) }
    })
    const proxy = await startProxyCli(upstream.url, `sqlite:${join(dir, 'e.db')}`, [
      '--stop-grace-s',
      '0.5',
    ])
    const whole = post(proxy.url, '/v1/chat/completions', chatBody())
    const streamed = post(proxy.url, '/v1/chat/completions', chatBody(true))
    // Each request's first round and its recall round: both now wait 10 s to ask again.
    await received(upstream, 4)
    proxy.child.kill('SIGTERM')
    const response = await whole
    assert.equal(response.statusCode, 503)
    const body = (await response.body.json()) as { error: { code: string } }
    assert.equal(body.error.code, 'stopping')
    const stream = await streamed
    assert.equal(stream.statusCode, 200)
    assert.match(await stream.body.text(), /data: \{"error":\{[^\n]*"code":"stopping"/)
    assert.equal(await exitOf(proxy), 0)
  })

  test('an answer still going to a slow client is not cut short', async () => {
    upstream.requests.length = 0
    const big = 'x'.repeat(8 * 1024 * 1024)
    upstream.setScript(() => ({ json: chatCompletion({ content: big }) }))
    const proxy = await startProxyCli(upstream.url, `sqlite:${join(dir, 'd.db')}`)
    const response = await post(proxy.url, '/v1/chat/completions', chatBody())
    proxy.child.kill('SIGTERM')
    // Not read yet: more of the answer is waiting in the proxy than the sockets' buffers hold.
    await sleep(500)
    let length = 0
    for await (const chunk of response.body) length += (chunk as Buffer).length
    assert.ok(length > big.length, `read ${length} bytes`)
    assert.equal(await exitOf(proxy), 0)
  })
})

describe('a port in use', () => {
  test('stops with a message saying so, alone and with --workers (no worker started again and again)', async () => {
    const upstream = await startFakeUpstream()
    const dir = mkdtempSync(join(tmpdir(), 'lembas-port-'))
    const first = await startProxyCli(upstream.url, 'memory:')
    const port = new URL(first.url).port
    try {
      for (const more of [[], ['--workers', '2']]) {
        const args = ['--port', port, '--upstream', upstream.url, '--store', `sqlite:${dir}/p.db`]
        const error = await startCli([...args, ...more]).then(
          () => assert.fail('it started'),
          (error: Error) => error,
        )
        assert.match(error.message, /^exited 1: /)
        assert.match(error.message, /cannot listen on 127\.0\.0\.1:\d+: another process listens/)
      }
    } finally {
      first.child.kill('SIGTERM')
      await exitOf(first)
      await upstream.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
