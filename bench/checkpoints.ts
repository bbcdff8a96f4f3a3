/**
 * SQLite's log checkpoints: SQLite's own (inside the commit that takes the log past 1000 pages)
 * against lembas's (when writes pause, or past 4 MiB), side by side in one run:
 *
 *   node --import tsx bench/checkpoints.ts [--writes 200] [--kb 40] [--pause-ms 250] [--runs 2]
 *
 * Two stores on two files in this process get the same writes, one after the other: a request's
 * records (`--kb` of values, as a 1 MB session's read writes), then a pause (a model's turn).
 * Shown per store: how long a write waited for its commit (p50, the longest), the writes that
 * waited over 3 ms, and the time spent in all of them. A checkpoint copies the log into the
 * database and syncs it; the store that runs it inside a commit makes that write wait for it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { openSqliteStore, type SqliteStore } from '../src/store/sqlite.js'
import { summarize } from './client.js'

const { values } = parseArgs({
  options: {
    writes: { type: 'string', default: '200' },
    kb: { type: 'string', default: '40' },
    'pause-ms': { type: 'string', default: '250' },
    runs: { type: 'string', default: '2' },
  },
})
const writes = Number(values.writes)
const kb = Number(values.kb)
const pauseMs = Number(values['pause-ms'])
for (const [name, n] of [
  ['--writes', writes],
  ['--kb', kb],
  ['--runs', Number(values.runs)],
] as const)
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: a whole number of at least 1`)

const SIDES = [
  { name: "SQLite's own", checkpointBytes: 0 },
  { name: 'lembas (default)', checkpointBytes: undefined },
] as const

const rows: string[] = []
for (let run = 0; run < Number(values.runs); run++) {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-checkpoints-'))
  const stores: SqliteStore[] = SIDES.map((side, i) =>
    openSqliteStore(join(dir, `${i}.db`), {
      idleTtlMs: 86_400_000,
      ...(side.checkpointBytes === undefined ? {} : { checkpointBytes: side.checkpointBytes }),
    }),
  )
  const times: number[][] = SIDES.map(() => [])
  try {
    const value = 'x'.repeat(kb * 1024)
    for (let k = 0; k < writes; k++) {
      const order = k % 2 === 0 ? [0, 1] : [1, 0]
      for (const i of order) {
        const started = performance.now()
        await stores[i]!.putIfAbsent('session', [[`r${k}`, value + k]])
        times[i]!.push(performance.now() - started)
      }
      await sleep(pauseMs)
    }
  } finally {
    for (const store of stores) await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
  SIDES.forEach((side, i) => {
    const own = times[i]!
    const { p50, max } = summarize(own)
    const total = own.reduce((a, b) => a + b, 0)
    const row =
      `${side.name.padEnd(16)}  p50 ${p50.toFixed(2).padStart(5)} ms  longest ${max.toFixed(1).padStart(5)} ms  ` +
      `over 3 ms: ${String(own.filter((t) => t > 3).length).padStart(3)}  all writes ${total.toFixed(0).padStart(5)} ms`
    rows.push(row)
    process.stderr.write(row + '\n')
  })
}
process.stdout.write(
  `${writes} writes of ${kb} KB, a ${pauseMs} ms pause after each, node ${process.version}:\n${rows.join('\n')}\n`,
)
