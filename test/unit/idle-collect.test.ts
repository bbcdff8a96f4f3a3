/**
 * The collection after a burst, on a real HTTP server and real bodies: when it runs (after
 * enough bodies, once none is in flight for the idle time), when it must not (during a request,
 * below the burst, twice for one burst), and that polls without a body do not hold it off.
 */
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import {
  BURST_BYTES,
  collectWhenIdle,
  fullCollection,
  majorCollection,
} from '../../src/http/idle-collect.js'
import { createLogger } from '../../src/log.js'

const MB = 1 << 20

interface Harness {
  readonly url: string
  readonly collections: () => number
  readonly lines: string[]
  /** Resolves the slow request's answer (a request to /slow waits for it). */
  readonly release: () => void
}

async function start(
  t: TestContext,
  options: { idleMs: number; burstBytes?: number },
): Promise<Harness> {
  let collections = 0
  let release = () => {}
  const server: Server = createServer((req, res) => {
    req.resume()
    req.once('end', () => {
      if (req.url !== '/slow') return void res.end('ok')
      release = () => res.end('ok')
    })
  })
  const lines: string[] = []
  const log = createLogger('info', (line) => void lines.push(line))
  collectWhenIdle(server, { ...options, collect: () => void collections++ }, log)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    collections: () => collections,
    lines,
    release: () => release(),
  }
}

async function post(url: string, bytes: number, path = '/'): Promise<void> {
  const response = await request(url + path, { method: 'POST', body: Buffer.alloc(bytes, 97) })
  await response.body.text()
}

async function get(url: string): Promise<void> {
  await (await request(url + '/stats')).body.text()
}

describe('collection after a burst', () => {
  test('runs once, the idle time after the burst, and not again without a new one', async (t) => {
    const proxy = await start(t, { idleMs: 150 })
    for (let i = 0; i < BURST_BYTES / MB + 1; i++) await post(proxy.url, MB)
    assert.equal(proxy.collections(), 0, 'not before the idle time')
    await sleep(400)
    assert.equal(proxy.collections(), 1)
    const line = JSON.parse(proxy.lines.find((l) => l.includes('memory-collected'))!) as Record<
      string,
      unknown
    >
    for (const field of ['ms', 'rssBeforeMb', 'rssAfterMb', 'heapBeforeMb', 'heapAfterMb'])
      assert.equal(typeof line[field], 'number', field)
    // Small requests afterwards are no new burst.
    for (let i = 0; i < 4; i++) await post(proxy.url, 1024)
    await sleep(400)
    assert.equal(proxy.collections(), 1)
  })

  test('never below the burst', async (t) => {
    const proxy = await start(t, { idleMs: 50, burstBytes: 4 * MB })
    for (let i = 0; i < 3; i++) await post(proxy.url, MB)
    await sleep(300)
    assert.equal(proxy.collections(), 0)
    await post(proxy.url, MB)
    await sleep(300)
    assert.equal(proxy.collections(), 1, 'the fourth megabyte makes it one')
  })

  test('waits while a request with a body is in flight, and a new one restarts the wait', async (t) => {
    const proxy = await start(t, { idleMs: 150, burstBytes: 2 * MB })
    await post(proxy.url, 2 * MB)
    const slow = post(proxy.url, 1024, '/slow')
    await sleep(20)
    // Another request ends while the slow one is still in flight.
    await post(proxy.url, 1024)
    await sleep(400)
    assert.equal(proxy.collections(), 0, 'a request is in flight')
    proxy.release()
    await slow
    await sleep(60)
    await post(proxy.url, 1024)
    await sleep(100)
    assert.equal(proxy.collections(), 0, 'the wait starts again after each request')
    await sleep(300)
    assert.equal(proxy.collections(), 1)
  })

  test('requests without a body (the dashboard polling) neither count nor hold it off', async (t) => {
    const proxy = await start(t, { idleMs: 200, burstBytes: 2 * MB })
    for (let i = 0; i < 20; i++) await get(proxy.url)
    await sleep(300)
    assert.equal(proxy.collections(), 0, 'polls are no burst')
    await post(proxy.url, 2 * MB)
    const polling = (async () => {
      for (let i = 0; i < 12; i++) {
        await get(proxy.url)
        await sleep(40)
      }
    })()
    await polling
    assert.equal(proxy.collections(), 1, 'collected while the polls went on')
  })

  // Node 20's V8 takes any options object given to `gc` for a young generation collection:
  // a collection called that way ran and freed nothing of the old space.
  for (const [name, make] of [
    ['the full collection after a burst', fullCollection],
    ['the collection after a request parsed whole', majorCollection],
  ] as const)
    test(`${name} frees garbage of the old space`, () => {
      const collect = make()
      assert.ok(collect, 'this Node hands out gc')
      let junk: { i: number; text: string }[] | undefined = Array.from(
        { length: 600_000 },
        (_, i) => ({ i, text: `line ${i}` }),
      )
      // Young collections while it lives move all of it to the old space.
      for (let round = 0; round < 64; round++) Array.from({ length: 50_000 }, (_, i) => ({ i }))
      assert.equal(junk.length, 600_000)
      junk = undefined
      const before = process.memoryUsage().heapUsed
      collect()
      const freed = before - process.memoryUsage().heapUsed
      assert.ok(freed > 20 * MB, `freed ${Math.round(freed / MB)} MB of about 40`)
    })
})
