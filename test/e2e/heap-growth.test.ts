/**
 * The old space's room after a pause (`--heap-growth-percent`), on the real command line: two
 * `lembas-proxy` processes, built, under `node --trace-gc`, on memory stores, the same sessions of
 * 1 MB histories (the bench's workload) to each. After a pause V8 has shrunk their heaps; then
 * requests come back to back, on the fast path. With V8's own rule (`0`) the limit stays so close
 * to what is live that V8 runs a full collection every few requests; with the default, (almost)
 * none.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fullCollections } from '../../bench/children.js'
import { postSession } from '../../bench/client.js'
import { sessionFor, sizeNamed } from '../../bench/workload.js'
import { packageRoot } from '../../src/config/loop.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { startCli, stopCli, type Running } from '../helpers/cli.js'

const SESSIONS = 8
/** Each session's first request and five more. */
const WARM_STEPS = 5
const MEASURED = 64
/** Longer than V8's memory reducer waits (8 s) before it shrinks an idle heap. */
const PAUSE_MS = 12_000

describe('--heap-growth-percent', () => {
  let upstream: FakeUpstream
  before(async () => {
    // Built as a user runs it: under tsx its loader's own heap (about 30 MB) hides what is measured.
    execFileSync('npm', ['run', 'build'], { cwd: packageRoot(), stdio: 'ignore' })
    upstream = await startFakeUpstream()
  })
  after(async () => {
    await upstream.close()
  })

  test('after a pause, 1 MB requests back to back do not run a full collection every few requests', async (t) => {
    const sessions = Array.from({ length: SESSIONS }, (_, s) =>
      sessionFor(sizeNamed('1mb'), 500 + s, false),
    )
    const warm = sessions.map((session) => [
      session.base(),
      ...Array.from({ length: WARM_STEPS }, () => session.next()),
    ])
    const measured = Array.from({ length: MEASURED }, (_, k) => sessions[k % SESSIONS]!.next())

    const start = (percent: string): Promise<Running> =>
      startCli(
        [
          '--trace-gc',
          packageRoot() + 'dist/src/cli.js',
          ...['--port', '0', '--upstream', upstream.url, '--store', 'memory:'],
          ...['--heap-growth-percent', percent],
        ],
        { LEMBAS_LOG_LEVEL: 'info' },
        {},
        process.execPath,
      )
    const warmUp = async (proxy: Running): Promise<void> => {
      for (const [s, bodies] of warm.entries())
        for (const body of bodies) await postSession(proxy.url, body, `heap-${s}`)
      upstream.requests.length = 0
    }
    /** V8's own full collections over the measured requests, which must all take the fast path. */
    const measure = async (proxy: Running): Promise<number> => {
      let trace = ''
      proxy.child.stdout!.on('data', (chunk) => (trace += chunk))
      for (const [k, body] of measured.entries()) {
        await postSession(proxy.url, body, `heap-${k % SESSIONS}`)
        if (k % 16 === 15) upstream.requests.length = 0
      }
      const requests = () => proxy.stderr().match(/"event":"request".*/g) ?? []
      for (let waited = 0; requests().length < warm.flat().length + MEASURED; waited += 50) {
        assert.ok(waited < 5000, 'request lines missing: ' + proxy.stderr())
        await sleep(50)
      }
      const full = requests()
        .slice(-MEASURED)
        .filter((line) => !line.includes('"spliced":1'))
      assert.deepEqual(full, [], 'every measured request on the fast path')
      return fullCollections(trace)
    }

    const own = await start('0')
    const grown = await start('200')
    try {
      await warmUp(own)
      await warmUp(grown)
      // A pause, as while a model thinks: V8's memory reducer shrinks both heaps, and the
      // proxy's idle collection runs.
      await sleep(PAUSE_MS)
      const ownCount = await measure(own)
      const grownCount = await measure(grown)
      t.diagnostic(
        `full collections in ${MEASURED} requests: ${ownCount} (0), ${grownCount} (default)`,
      )
      assert.ok(
        grownCount <= 2,
        `${grownCount} full collections in ${MEASURED} requests with the default`,
      )
      assert.ok(
        ownCount >= grownCount + 3,
        `V8's own rule: ${ownCount}, the default: ${grownCount} (the setting does nothing?)`,
      )
    } finally {
      await stopCli(own)
      await stopCli(grown)
      upstream.requests.length = 0
    }
  })
})
