/**
 * Requests back to back after a pause, with V8's own heap growth rule and with lembas's default
 * (`--heap-growth-percent`), side by side in one run:
 *
 *   npm run build && node --import tsx bench/after-idle.ts [--size 1mb] [--sessions 8]
 *     [--requests 120] [--pause-ms 12000] [--runs 2] [--store sqlite|memory]
 *
 * Two processes from `dist/` under `node --trace-gc`, each on its own SQLite file (or a memory
 * store: another Node's better-sqlite3 need not be built), in front of the bench's fake upstream
 * (a process of its own that never parses a body), get the same sessions: each session's first
 * request and five more, a pause (V8's memory reducer shrinks an idle heap after about 8 s; a
 * model thinking is such a pause), then the measured requests, each body to one process and then
 * the other, in an order that alternates. Shown per process: the whole request's p50 and mean as
 * the client sees it, and the full collections V8 ran (its own; the proxy's `gc()` calls are left
 * out) per 100 requests.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { packageRoot } from '../src/config/loop.js'
import { startCli, stopCli, type Running } from '../test/helpers/cli.js'
import { builtCli, fullCollections, spawnChild, stopAll } from './children.js'
import { postSession, summarize } from './client.js'
import { sessionFor, sizeNamed } from './workload.js'

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '1mb' },
    sessions: { type: 'string', default: '8' },
    requests: { type: 'string', default: '120' },
    'pause-ms': { type: 'string', default: '12000' },
    runs: { type: 'string', default: '2' },
    store: { type: 'string', default: 'sqlite' },
  },
})
const size = sizeNamed(values.size)
const cli = builtCli()
if (!['sqlite', 'memory'].includes(values.store)) throw new Error('--store: sqlite or memory')
const sessionCount = Number(values.sessions)
const requests = Number(values.requests)

const SIDES = [
  { name: "V8's own rule (0)", percent: '0' },
  { name: 'default (200)', percent: '200' },
] as const

// The bench's own fake: a separate process that never parses a body.
const upstream = await spawnChild({
  name: 'fake-upstream',
  command: process.execPath,
  args: ['--import', 'tsx', 'bench/fake-upstream.ts', '0'],
  cwd: packageRoot(),
  ready: /fake-upstream listening on (http:\/\/\S+)/,
})

interface Side {
  readonly proxy: Running
  readonly times: number[]
  trace: string
}

async function run(seed: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-after-idle-'))
  const sides: Side[] = []
  try {
    for (const [i, { percent }] of SIDES.entries()) {
      const args = [
        '--port',
        '0',
        '--upstream',
        upstream.url + '/v1',
        '--store',
        values.store === 'memory' ? 'memory:' : `sqlite:${dir}/${i}.db`,
        '--heap-growth-percent',
        percent,
      ]
      const proxy = await startCli(['--trace-gc', cli, ...args], {}, {}, process.execPath)
      const side: Side = { proxy, times: [], trace: '' }
      proxy.child.stdout!.on('data', (chunk) => (side.trace += chunk))
      sides.push(side)
    }
    const sessions = Array.from({ length: sessionCount }, (_, s) =>
      sessionFor(size, seed + s, false),
    )
    for (const [s, session] of sessions.entries()) {
      const bodies = [session.base(), ...Array.from({ length: 5 }, () => session.next())]
      for (const body of bodies)
        for (const side of sides) await postSession(side.proxy.url, body, `i${s}`)
    }
    const measured = Array.from({ length: requests }, (_, k) => sessions[k % sessionCount]!.next())
    await sleep(Number(values['pause-ms']))
    for (const side of sides) side.trace = ''
    for (const [k, body] of measured.entries()) {
      const order = k % 2 === 0 ? sides : [...sides].reverse()
      for (const side of order)
        side.times.push(await postSession(side.proxy.url, body, `i${k % sessionCount}`))
    }
    return sides.map((side, i) => {
      const full = fullCollections(side.trace)
      const { p50 } = summarize(side.times)
      const mean = side.times.reduce((a, b) => a + b, 0) / side.times.length
      return (
        `${SIDES[i]!.name.padEnd(18)}  p50 ${p50.toFixed(1).padStart(5)} ms  mean ` +
        `${mean.toFixed(1).padStart(5)} ms  full collections ${((100 * full) / requests).toFixed(0).padStart(3)} per 100 requests`
      )
    })
  } finally {
    for (const side of sides) await stopCli(side.proxy)
    rmSync(dir, { recursive: true, force: true })
  }
}

const rows: string[] = []
try {
  for (let r = 0; r < Number(values.runs); r++) {
    for (const row of await run(9000 + 100 * r)) {
      rows.push(row)
      process.stderr.write(row + '\n')
    }
  }
} finally {
  await stopAll()
}
process.stdout.write(
  `${values.sessions} sessions of ${size.name}, ${requests} requests back to back after a ` +
    `${Number(values['pause-ms']) / 1000} s pause, node ${process.version}:\n${rows.join('\n')}\n`,
)
