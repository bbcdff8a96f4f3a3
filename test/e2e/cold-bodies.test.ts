/**
 * `--cold-bodies-mb`: bodies of requests no remembered session goes on from (they are parsed
 * whole) are read within a byte budget, so many sessions starting together do not all hold
 * their bodies and parse trees at once; a request of a session the proxy goes on from never
 * waits for them. `--cold-collect-kb`: once such a request of a large body is answered, one
 * full collection.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { test } from 'node:test'
import { gzipSync } from 'node:zlib'
import { createStore } from '../../src/store/index.js'
import { startProxyCli, stopCli } from '../helpers/cli.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { chatWithResults, postChat, startProxy } from '../helpers/proxy.js'

const DAY = 86_400_000

/** A request whose body is sent in two halves: the second when `finish` is called. */
function slowPost(url: string, body: string, session: string) {
  const bytes = Buffer.from(body)
  const target = new URL(url + '/v1/chat/completions')
  let finish!: () => void
  const answered = new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(bytes.length),
          authorization: 'Bearer test-key',
          'x-session-id': session,
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.write(bytes.subarray(0, bytes.length >> 1))
    finish = () => req.end(bytes.subarray(bytes.length >> 1))
  })
  return { answered, finish: () => finish() }
}

/** A request of about 100 KB per `size` (bodies up to 64 KB never wait). */
const body = (tag: string, size = 1) =>
  chatWithResults([
    { id: `call_${tag}`, output: `${tag} `.repeat((size * 100_000) / (tag.length + 1)) },
  ])

test('a new session waits while cold bodies fill the budget; a known session or a small body does not', async (t) => {
  const upstream = await startFakeUpstream()
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const proxy = await startProxy({ upstreamUrl: upstream.url, store, coldBodiesBytes: 150_000 })
  let slow: ReturnType<typeof slowPost> | undefined
  t.after(async () => {
    slow?.finish() // a failed check leaves no body open for the close to wait on
    await proxy.close()
    await upstream.close()
  })
  // Session "known" has been seen: its next request goes on from it.
  const first = body('known')
  assert.equal((await postChat(proxy.url, first, { 'x-session-id': 'known' })).status, 200)

  slow = slowPost(proxy.url, JSON.stringify(body('slow')), 'slow')
  const order: string[] = []
  const waiting = postChat(proxy.url, body('waiting'), { 'x-session-id': 'waiting' }).then(
    (reply) => (order.push('waiting'), reply.status),
  )
  const next = {
    ...first,
    messages: [
      ...first.messages,
      { role: 'assistant', content: 'and now?' },
      { role: 'user', content: 'go on' },
    ],
  }
  const known = await postChat(proxy.url, next, { 'x-session-id': 'known' })
  assert.equal(known.status, 200, 'the known session went on while the slow body was held')
  const tiny = await postChat(proxy.url, body('tiny', 0.01), { 'x-session-id': 'tiny' })
  assert.equal(tiny.status, 200, 'a small new body went on too')
  assert.equal(order.length, 0, 'the new session still waits for room')
  order.push('slow finished')
  slow.finish()
  assert.equal(await slow.answered, 200)
  assert.equal(await waiting, 200)
  assert.deepEqual(order, ['slow finished', 'waiting'], 'let in once the slow body was parsed')
})

test('a compressed new body is let in by its decoded size, not its length on the wire', async (t) => {
  const upstream = await startFakeUpstream()
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const proxy = await startProxy({ upstreamUrl: upstream.url, store, coldBodiesBytes: 150_000 })
  let slow: ReturnType<typeof slowPost> | undefined
  t.after(async () => {
    slow?.finish()
    await proxy.close()
    await upstream.close()
  })
  slow = slowPost(proxy.url, JSON.stringify(body('slow')), 'slow')
  // About 100 KB once decoded, a few hundred bytes gzipped: it does not fit beside the slow one.
  const zipped = gzipSync(JSON.stringify(body('zipped')))
  assert.ok(zipped.length < 4096, `${zipped.length} bytes`)
  const order: string[] = []
  const waiting = fetch(proxy.url + '/v1/chat/completions', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      authorization: 'Bearer test-key',
      'x-session-id': 'zipped',
    },
    body: zipped,
  }).then(async (reply) => (order.push('zipped'), await reply.text(), reply.status))
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.equal(order.length, 0, 'the compressed body waits for room')
  order.push('slow finished')
  slow.finish()
  assert.equal(await slow.answered, 200)
  assert.equal(await waiting, 200)
  assert.deepEqual(order, ['slow finished', 'zipped'])
})

test('many new sessions at once within a small budget: every one answered', async (t) => {
  const upstream = await startFakeUpstream()
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const proxy = await startProxy({ upstreamUrl: upstream.url, store, coldBodiesBytes: 250_000 })
  t.after(async () => {
    await proxy.close()
    await upstream.close()
  })
  const replies = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      postChat(proxy.url, body(`s${i}`), { 'x-session-id': `s${i}` }),
    ),
  )
  assert.deepEqual(
    replies.map((reply) => reply.status),
    replies.map(() => 200),
  )
  assert.equal(upstream.requests.length, 24, 'each reached the upstream once')
})

test('/metrics shows the cold bodies let in and the requests waiting for room', async (t) => {
  const upstream = await startFakeUpstream()
  const proxy = await startProxyCli(upstream.url, 'memory:', ['--cold-bodies-mb', '0.15'])
  let slow: ReturnType<typeof slowPost> | undefined
  t.after(async () => {
    slow?.finish()
    await stopCli(proxy)
    await upstream.close()
  })
  const gauges = async () => {
    const text = await (await fetch(proxy.url + '/metrics')).text()
    const of = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
    return { bytes: of('lembas_cold_body_bytes'), waiting: of('lembas_cold_bodies_waiting') }
  }
  assert.deepEqual(await gauges(), { bytes: 0, waiting: 0 }, 'idle: nothing let in or waiting')
  const slowText = JSON.stringify(body('slow'))
  slow = slowPost(proxy.url, slowText, 'slow')
  const waiting = postChat(proxy.url, body('waiting'), { 'x-session-id': 'waiting' })
  let seen = await gauges()
  for (let i = 0; i < 200 && seen.waiting === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    seen = await gauges()
  }
  assert.deepEqual(
    seen,
    { bytes: Buffer.byteLength(slowText), waiting: 1 },
    'the slow body holds the budget; the next new session waits',
  )
  slow.finish()
  assert.equal(await slow.answered, 200)
  assert.equal((await waiting).status, 200)
  assert.deepEqual(await gauges(), { bytes: 0, waiting: 0 }, 'both gone through: all given back')
})

test('one full collection after answering each large body parsed whole, none after others', async (t) => {
  const upstream = await startFakeUpstream()
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const ended: string[] = []
  let current = ''
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store,
    coldCollectBytes: 150_000,
    collect: () => void ended.push(current),
  })
  t.after(async () => {
    await proxy.close()
    await upstream.close()
  })
  const send = async (name: string, request: ReturnType<typeof body>, session: string) => {
    current = name
    assert.equal((await postChat(proxy.url, request, { 'x-session-id': session })).status, 200)
    // The collection runs once the answer has gone: give the response's close its turn.
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const large = body('large', 2) // about 200 KB
  await send('large, new', large, 'large')
  await send('small, new', body('small', 1), 'small') // about 100 KB: under the size
  const next = {
    ...large,
    messages: [
      ...large.messages,
      { role: 'assistant', content: 'and?' },
      { role: 'user', content: 'go' },
    ],
  }
  await send('large, known', next, 'large')
  await send('large, another new', body('other', 2), 'other')
  assert.deepEqual(ended, ['large, new', 'large, another new'])
})

test('--cold-collect-kb 0: no collection after a large new session', async (t) => {
  const upstream = await startFakeUpstream()
  const store = await createStore('memory:', { idleTtlMs: DAY })
  let collections = 0
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store,
    coldCollectBytes: 0,
    collect: () => void collections++,
  })
  t.after(async () => {
    await proxy.close()
    await upstream.close()
  })
  const reply = await postChat(proxy.url, body('large', 3), { 'x-session-id': 'large' })
  assert.equal(reply.status, 200)
  await new Promise((resolve) => setTimeout(resolve, 50))
  assert.equal(collections, 0)
})
