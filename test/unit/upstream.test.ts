import assert from 'node:assert/strict'
import { createServer as createHttpServer } from 'node:http'
import { createServer } from 'node:net'
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib'
import { Readable } from 'node:stream'
import { text } from 'node:stream/consumers'
import { afterEach, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { LembasError } from '../../src/errors.js'
import { decodeSse } from '../../src/wire/sse.js'
import { createUpstream, type Upstream } from '../../src/upstream/index.js'
import { toUpstreamError } from '../../src/upstream/errors.js'
import { parseUpstreamTarget, upstreamPath } from '../../src/upstream/target.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'

/** Reads an answer's body to its end. */
async function drain(response: Promise<{ body: Readable }>): Promise<void> {
  await text((await response).body)
}

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function fakeWith(script?: Parameters<typeof startFakeUpstream>[0]): Promise<FakeUpstream> {
  const fake = await startFakeUpstream(script)
  cleanups.push(() => fake.close())
  return fake
}

function upstreamFor(baseUrl: string, timeoutMs = 600_000): Upstream {
  const upstream = createUpstream({ baseUrl, timeoutMs })
  cleanups.push(() => upstream.close())
  return upstream
}

async function until(condition: () => boolean): Promise<void> {
  for (let tries = 0; !condition(); tries++) {
    if (tries > 200) throw new Error('condition not met within 2 s')
    await sleep(10)
  }
}

/** A port nothing listens on: bound, then released. */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

const isKind = (kind: LembasError['kind']) => (error: unknown) =>
  error instanceof LembasError && error.kind === kind

describe('upstreamPath', () => {
  test('joins below the base path, with or without a trailing slash', () => {
    for (const base of ['http://127.0.0.1:8080/v1', 'http://127.0.0.1:8080/v1/']) {
      const target = parseUpstreamTarget(base)
      assert.equal(upstreamPath(target, '/chat/completions'), '/v1/chat/completions')
      assert.equal(upstreamPath(target, 'models'), '/v1/models')
      assert.equal(upstreamPath(target, '/models?limit=2'), '/v1/models?limit=2')
    }
    assert.equal(upstreamPath(parseUpstreamTarget('http://h:1'), '/v1/x'), '/v1/x')
    assert.equal(upstreamPath(parseUpstreamTarget('http://h:1/'), ''), '/')
  })

  test('puts the base query first and drops a fragment', () => {
    const target = parseUpstreamTarget(
      'https://h.example/openai/deployments/d?api-version=2024-02-01',
    )
    assert.equal(
      upstreamPath(target, '/chat/completions?x=1#frag'),
      '/openai/deployments/d/chat/completions?api-version=2024-02-01&x=1',
    )
  })

  test('refuses dot segments that would leave the base path', () => {
    const target = parseUpstreamTarget('http://h/v1')
    for (const path of ['/../admin', '/a/./b', '/%2e%2e/admin', '/..', '/.%2E/x']) {
      assert.throws(() => upstreamPath(target, path), isKind('invalid_request'), path)
    }
    assert.equal(upstreamPath(target, '/a..b/.well'), '/v1/a..b/.well')
    // Where a server or a proxy before it decodes `%2f` (nginx) or takes `\` for `/`.
    for (const path of ['/..%2f..%2fteam-b', '/%2e%2e%2F%2e%2e%2fx', '/a%5c..%5cb', '/a\\..\\b']) {
      assert.throws(() => upstreamPath(target, path), isKind('invalid_request'), path)
    }
    assert.equal(upstreamPath(target, '/files/a%2fb..c'), '/v1/files/a%2fb..c')
  })

  test('keeps credentials out of the display URL', () => {
    const target = parseUpstreamTarget('http://user:s%3Acret@127.0.0.1:9/v1/?key=k')
    assert.equal(target.displayUrl, 'http://127.0.0.1:9/v1')
    assert.equal(
      target.basicAuthorization,
      `Basic ${Buffer.from('user:s:cret').toString('base64')}`,
    )
  })

  test('rejects a base URL that is not http(s)', () => {
    assert.throws(() => parseUpstreamTarget('ftp://h/v1'), isKind('config_invalid'))
    assert.throws(() => parseUpstreamTarget('not a url'), isKind('config_invalid'))
  })
})

describe('createUpstream', () => {
  test('sends method, path, headers and body to the joined URL', async () => {
    const fake = await fakeWith()
    const upstream = upstreamFor(`${fake.url}/`)
    const response = await upstream.send({
      method: 'POST',
      path: '/chat/completions?trace=1',
      headers: {
        authorization: 'Bearer sk-test',
        'content-type': 'application/json',
        'x-custom': 'é',
      },
      body: '{"model":"m","messages":[{"role":"user","content":"é"}]}',
    })
    assert.equal(response.status, 200)
    assert.match(String(response.headers['content-type']), /application\/json/)
    const body = JSON.parse(await text(response.body)) as { object: string }
    assert.equal(body.object, 'chat.completion')

    const [recorded] = fake.requests
    assert.equal(recorded?.method, 'POST')
    assert.equal(recorded?.path, '/v1/chat/completions?trace=1')
    assert.equal(recorded?.headers['authorization'], 'Bearer sk-test')
    assert.equal(recorded?.headers['x-custom'], 'é')
    assert.equal(recorded?.body, '{"model":"m","messages":[{"role":"user","content":"é"}]}')
    assert.equal(
      recorded?.headers['content-length'],
      String(Buffer.byteLength(recorded?.body ?? '')),
    )
  })

  test('sends a GET without a body, and a Uint8Array or stream body', async () => {
    const fake = await fakeWith()
    const upstream = upstreamFor(fake.url)
    await await drain(upstream.send({ method: 'GET', path: '/models', headers: {} }))
    await (
      await upstream.send({
        method: 'POST',
        path: '/a',
        headers: {},
        body: new TextEncoder().encode('bytes'),
      })
    ).body.resume()
    await (
      await upstream.send({
        method: 'POST',
        path: '/b',
        headers: {},
        body: Readable.from(['str', 'eam']),
      })
    ).body.resume()
    assert.deepEqual(
      fake.requests.map((recorded) => [recorded.method, recorded.path, recorded.body]),
      [
        ['GET', '/v1/models', ''],
        ['POST', '/v1/a', 'bytes'],
        ['POST', '/v1/b', 'stream'],
      ],
    )
  })

  test('drops framing headers the caller left in, so a rewritten body still goes out', async () => {
    const fake = await fakeWith()
    const upstream = upstreamFor(fake.url)
    const response = await upstream.send({
      method: 'POST',
      path: '/chat/completions',
      headers: {
        'Content-Length': '999',
        Connection: 'close, x-foo',
        host: 'proxy.local',
        'Transfer-Encoding': 'chunked',
      },
      body: '{}',
    })
    await text(response.body)
    const headers = fake.requests[0]?.headers ?? {}
    assert.equal(headers['content-length'], '2')
    assert.equal(headers['host'], new URL(fake.url).host)
    assert.equal(headers['transfer-encoding'], undefined)
  })

  test('sends base-URL credentials as Basic auth only when the request has no Authorization', async () => {
    const fake = await fakeWith()
    const url = new URL(fake.url)
    url.username = 'user'
    url.password = 'pass'
    const upstream = upstreamFor(url.href)
    await await drain(upstream.send({ method: 'GET', path: '/models', headers: {} }))
    await (
      await upstream.send({
        method: 'GET',
        path: '/models',
        headers: { Authorization: 'Bearer k' },
      })
    ).body.resume()
    assert.equal(
      fake.requests[0]?.headers['authorization'],
      `Basic ${Buffer.from('user:pass').toString('base64')}`,
    )
    assert.equal(fake.requests[1]?.headers['authorization'], 'Bearer k')
  })

  test('returns a redirect as is, without following it', async () => {
    const fake = await fakeWith(() => ({
      status: 302,
      body: '',
      headers: { location: 'http://127.0.0.1:1/elsewhere' },
    }))
    const response = await upstreamFor(fake.url).send({
      method: 'POST',
      path: '/c',
      headers: {},
      body: '{}',
    })
    await text(response.body)
    assert.equal(response.status, 302)
    assert.equal(response.headers['location'], 'http://127.0.0.1:1/elsewhere')
    assert.equal(fake.requests.length, 1)
  })

  test('passes error statuses through as responses', async () => {
    const fake = await fakeWith(() => ({ json: { error: { message: 'bad' } }, status: 400 }))
    const response = await upstreamFor(fake.url).send({
      method: 'POST',
      path: '/c',
      headers: {},
      body: '{}',
    })
    assert.equal(response.status, 400)
    assert.deepEqual(JSON.parse(await text(response.body)), { error: { message: 'bad' } })
  })

  test('a refused connection is upstream_unreachable, quickly, and names no credentials', async () => {
    const port = await freePort()
    const upstream = upstreamFor(`http://user:hunter2@127.0.0.1:${port}/v1`)
    const started = Date.now()
    await assert.rejects(
      upstream.send({ method: 'POST', path: '/chat/completions', headers: {}, body: '{}' }),
      (error: unknown) => {
        assert.ok(error instanceof LembasError)
        assert.equal(error.kind, 'upstream_unreachable')
        assert.equal(error.status, 502)
        assert.equal(
          error.message,
          `upstream http://127.0.0.1:${port}/v1 refused the connection (ECONNREFUSED)`,
        )
        assert.doesNotMatch(error.message, /hunter2|user/)
        return true
      },
    )
    assert.ok(Date.now() - started < 1000)
  })

  test('an unresolvable host is upstream_unreachable', async () => {
    const upstream = upstreamFor('http://lembas-no-such-host.invalid/v1')
    await assert.rejects(
      upstream.send({ method: 'GET', path: '/models', headers: {} }),
      (error: unknown) =>
        isKind('upstream_unreachable')(error) && /could not be resolved/.test(String(error)),
    )
  })

  test('an upstream that never answers is upstream_timeout after timeoutMs', async () => {
    const fake = await fakeWith(() => ({ hang: true }))
    const upstream = upstreamFor(fake.url, 300)
    const started = Date.now()
    await assert.rejects(
      upstream.send({ method: 'POST', path: '/c', headers: {}, body: '{}' }),
      (error: unknown) => {
        assert.ok(isKind('upstream_timeout')(error))
        assert.equal(
          (error as LembasError).message,
          'upstream did not answer within 0.3 s (--upstream-timeout-ms)',
        )
        assert.equal((error as LembasError).status, 504)
        return true
      },
    )
    const elapsed = Date.now() - started
    assert.ok(elapsed >= 250 && elapsed < 2000, `timed out after ${elapsed} ms`)
    await until(() => fake.requests[0]?.aborted === true)
  })

  test('a stream that stalls between events is upstream_timeout via mapError', async () => {
    const fake = await fakeWith(() => ({ sse: ['a', 'b'], delayMs: 2000 }))
    const upstream = upstreamFor(fake.url, 300)
    const response = await upstream.send({ method: 'POST', path: '/c', headers: {}, body: '{}' })
    const received: string[] = []
    await assert.rejects(
      (async () => {
        try {
          for await (const event of decodeSse(response.body)) received.push(event.data)
        } catch (error) {
          throw upstream.mapError(error)
        }
      })(),
      isKind('upstream_timeout'),
    )
    assert.deepEqual(received, ['a'])
  })

  test('aborting while waiting for headers closes the upstream request and rejects with AbortError', async () => {
    const fake = await fakeWith(() => ({ hang: true }))
    const upstream = upstreamFor(fake.url)
    const controller = new AbortController()
    const pending = upstream.send({
      method: 'POST',
      path: '/c',
      headers: {},
      body: '{}',
      signal: controller.signal,
    })
    await until(() => fake.requests.length === 1)
    controller.abort()
    await assert.rejects(pending, { name: 'AbortError' })
    await until(() => fake.requests[0]?.aborted === true)
  })

  test('aborting with a custom reason still rejects with an AbortError', async () => {
    const fake = await fakeWith(() => ({ hang: true }))
    const upstream = upstreamFor(fake.url)
    const controller = new AbortController()
    const pending = upstream.send({
      method: 'POST',
      path: '/c',
      headers: {},
      body: '{}',
      signal: controller.signal,
    })
    await until(() => fake.requests.length === 1)
    controller.abort(new Error('client went away'))
    await assert.rejects(pending, (error: unknown) => {
      assert.equal((error as Error).name, 'AbortError')
      assert.equal(((error as Error).cause as Error).message, 'client went away')
      return true
    })
    await until(() => fake.requests[0]?.aborted === true)
  })

  test('an already aborted signal rejects with AbortError and sends nothing', async () => {
    const fake = await fakeWith()
    const upstream = upstreamFor(fake.url)
    await assert.rejects(
      upstream.send({ method: 'GET', path: '/models', headers: {}, signal: AbortSignal.abort() }),
      { name: 'AbortError' },
    )
    await sleep(50)
    assert.equal(fake.requests.length, 0)
  })

  test('aborting mid-stream closes the upstream request', async () => {
    const fake = await fakeWith(() => ({ sse: ['a', 'b', 'c'], delayMs: 1000 }))
    const upstream = upstreamFor(fake.url)
    const controller = new AbortController()
    const response = await upstream.send({
      method: 'POST',
      path: '/c',
      headers: {},
      body: '{}',
      signal: controller.signal,
    })
    const received: string[] = []
    await assert.rejects(
      (async () => {
        try {
          for await (const event of decodeSse(response.body)) {
            received.push(event.data)
            controller.abort()
          }
        } catch (error) {
          throw upstream.mapError(error, controller.signal)
        }
      })(),
      { name: 'AbortError' },
    )
    assert.deepEqual(received, ['a'])
    await until(() => fake.requests[0]?.aborted === true)
  })

  test('a stream is readable event by event while the upstream is still sending', async () => {
    const fake = await fakeWith(() => ({ sse: ['first', 'second'], delayMs: 400 }))
    const upstream = upstreamFor(fake.url)
    const started = Date.now()
    const response = await upstream.send({ method: 'POST', path: '/c', headers: {}, body: '{}' })
    assert.equal(response.headers['content-type'], 'text/event-stream')
    const arrivals: [string, number][] = []
    for await (const event of decodeSse(response.body))
      arrivals.push([event.data, Date.now() - started])
    assert.deepEqual(
      arrivals.map(([data]) => data),
      ['first', 'second', '[DONE]'],
    )
    assert.ok(arrivals[0]![1] < 300, `first event after ${arrivals[0]![1]} ms`)
    assert.ok(arrivals[1]![1] >= 380, `second event after ${arrivals[1]![1]} ms`)
  })

  test('a stream the upstream cuts short fails as upstream_unreachable via mapError', async () => {
    const fake = await fakeWith(() => ({ sse: ['a', 'b'], cutAfter: 1 }))
    const upstream = upstreamFor(fake.url)
    const response = await upstream.send({ method: 'POST', path: '/c', headers: {}, body: '{}' })
    await assert.rejects(
      (async () => {
        try {
          for await (const _event of decodeSse(response.body));
        } catch (error) {
          throw upstream.mapError(error)
        }
      })(),
      (error: unknown) =>
        isKind('upstream_unreachable')(error) && /closed the connection/.test(String(error)),
    )
  })

  test('a body compressed unasked is decoded, its header dropped; a corrupt one is upstream_bad_response', async () => {
    const json = '{"object":"chat.completion","text":"' + 'x'.repeat(5000) + '"}'
    const bodies: Record<string, Buffer> = {
      gzip: gzipSync(json),
      deflate: deflateSync(json),
      br: brotliCompressSync(json),
      broken: Buffer.from('not gzip at all'),
    }
    const server = createHttpServer((request, response) => {
      const coding = request.url!.slice(1)
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-encoding': coding === 'broken' ? 'gzip' : coding,
      })
      response.end(bodies[coding])
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => server.close(() => resolve())))
    const upstream = upstreamFor(`http://127.0.0.1:${(server.address() as { port: number }).port}`)
    for (const coding of ['gzip', 'deflate', 'br']) {
      const response = await upstream.send({ method: 'GET', path: '/' + coding, headers: {} })
      assert.equal(response.headers['content-encoding'], undefined, coding)
      assert.equal(await text(response.body), json, coding)
    }
    const broken = await upstream.send({ method: 'GET', path: '/broken', headers: {} })
    await assert.rejects(
      text(broken.body).catch((error: unknown) => {
        throw upstream.mapError(error)
      }),
      (error: unknown) =>
        isKind('upstream_bad_response')(error) &&
        /Content-Encoding does not decode/.test(String(error)),
    )
  })

  test('a response that is not HTTP is upstream_bad_response', async () => {
    const fake = await fakeWith(() => ({ raw: 'SMTP ready\r\n\r\n' }))
    await assert.rejects(
      upstreamFor(fake.url).send({ method: 'POST', path: '/c', headers: {}, body: '{}' }),
      isKind('upstream_bad_response'),
    )
  })
})

describe('toUpstreamError', () => {
  const context = {
    displayUrl: 'http://10.0.0.1:8000/v1',
    timeoutMs: 600_000,
    connectTimeoutMs: 10_000,
  }
  const withCode = (code: string) => Object.assign(new Error(code), { code })

  test('maps each undici and socket code to its kind and message', () => {
    const cases: [string, LembasError['kind'], string][] = [
      [
        'ECONNREFUSED',
        'upstream_unreachable',
        'upstream http://10.0.0.1:8000/v1 refused the connection (ECONNREFUSED)',
      ],
      [
        'ENOTFOUND',
        'upstream_unreachable',
        'upstream http://10.0.0.1:8000/v1 could not be resolved (ENOTFOUND)',
      ],
      [
        'UND_ERR_SOCKET',
        'upstream_unreachable',
        'upstream http://10.0.0.1:8000/v1 closed the connection (UND_ERR_SOCKET)',
      ],
      [
        'ECONNRESET',
        'upstream_unreachable',
        'upstream http://10.0.0.1:8000/v1 closed the connection (ECONNRESET)',
      ],
      [
        'UND_ERR_CONNECT_TIMEOUT',
        'upstream_unreachable',
        'upstream http://10.0.0.1:8000/v1 did not accept the connection within 10 s (UND_ERR_CONNECT_TIMEOUT)',
      ],
      [
        'UND_ERR_HEADERS_TIMEOUT',
        'upstream_timeout',
        'upstream did not answer within 600 s (--upstream-timeout-ms)',
      ],
      [
        'UND_ERR_BODY_TIMEOUT',
        'upstream_timeout',
        'upstream sent nothing for 600 s in the middle of its answer (--upstream-timeout-ms)',
      ],
      [
        'HPE_INVALID_CONSTANT',
        'upstream_bad_response',
        'upstream http://10.0.0.1:8000/v1 sent a malformed response (HPE_INVALID_CONSTANT)',
      ],
      [
        'CERT_HAS_EXPIRED',
        'upstream_unreachable',
        'upstream http://10.0.0.1:8000/v1 failed the TLS handshake (CERT_HAS_EXPIRED)',
      ],
    ]
    for (const [code, kind, message] of cases) {
      const cause = withCode(code)
      const mapped = toUpstreamError(cause, context)
      assert.ok(mapped instanceof LembasError, code)
      assert.equal(mapped.kind, kind, code)
      assert.equal(mapped.message, message, code)
      assert.equal(mapped.cause, cause, code)
    }
  })

  test('reads the code of a happy-eyeballs AggregateError', () => {
    const mapped = toUpstreamError(
      new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')]),
      context,
    )
    assert.ok(isKind('upstream_unreachable')(mapped))
  })

  test('returns unknown errors and aborts unchanged', () => {
    const bug = withCode('UND_ERR_INVALID_ARG')
    assert.equal(toUpstreamError(bug, context), bug)
    const plain = new TypeError('x')
    assert.equal(toUpstreamError(plain, context), plain)
    const abort = new DOMException('aborted', 'AbortError')
    assert.equal(toUpstreamError(abort, context), abort)
  })
})
