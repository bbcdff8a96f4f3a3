/**
 * Concurrency (issue 7, item 3): two lembas-proxy processes on one Redis, 50 sessions of 40
 * requests each, in parallel; each turn carries 2-3 parallel tool results, and about one request
 * in ten is sent twice at once, to both processes, as a client's retry would be. The scenario is
 * bench/concurrency.ts, the same one `npm run bench` reports as a load figure.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formatFigures, runConcurrency } from '../../bench/concurrency.js'

test(
  '50 sessions x 40 requests over two processes on one Redis: no id collision, one rendering per request, every history a byte-prefix of the next',
  { timeout: 120_000 },
  async (t) => {
    const figures = await runConcurrency({
      sessions: 50,
      requests: 40,
      processes: 2,
      retryShare: 0.1,
      // $REDIS_URL when set (sessions are named uniquely); otherwise a redis-server of its own.
      redisUrl: process.env.REDIS_URL,
    })
    t.diagnostic(formatFigures(figures))
    assert.deepEqual(figures.problems, [])
    assert.equal(figures.failed, 0)
    assert.equal(figures.idCollisions, 0)
    assert.equal(figures.differingRenderings, 0)
    assert.equal(figures.prefixViolations, 0)
    assert.ok(figures.retries > 100, `${figures.retries} retries`)
    assert.equal(figures.requests, 50 * 40 + figures.retries)
    // Every turn's 2 or 3 results were numbered: ~2.5 per request.
    assert.ok(figures.toolResults >= 50 * 40 * 2, `${figures.toolResults} results`)
    assert.ok(figures.seconds < 60, `${figures.seconds} s`)
  },
)
