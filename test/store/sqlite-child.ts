/**
 * Run by sqlite.test.ts in another process (sometimes as another user):
 *   claim FILE SCOPE SEED ROUNDS START_MS  → claims random keys from START_MS on, prints the calls
 *   open FILE                             → tries to open, then write; prints the outcome
 */
import { LembasError } from '../../src/errors.js'
import { openSqliteStore } from '../../src/store/sqlite.js'
import { prng } from './contract.js'

const [mode, file, ...rest] = process.argv.slice(2)
const idleTtlMs = 3_600_000

if (mode === 'claim') {
  const [scope, seed, rounds, startMs] = rest
  const store = openSqliteStore(file!, { idleTtlMs })
  const random = prng(Number(seed))
  const calls: string[][] = []
  const results: number[][] = []
  while (Date.now() < Number(startMs)) await new Promise((r) => setTimeout(r, 5))
  for (let i = 0; i < Number(rounds); i++) {
    const keys = Array.from({ length: 10 }, () => `key-${Math.floor(random() * 300)}`)
    calls.push(keys)
    results.push(await store.claimIds(scope!, keys))
  }
  await store.close()
  process.stdout.write(JSON.stringify({ calls, results }))
} else if (mode === 'open') {
  let stage = 'open'
  try {
    const store = openSqliteStore(file!, { idleTtlMs })
    stage = 'write'
    await store.putIfAbsent('s', [['k', 'v']])
    await store.close()
    process.stdout.write(JSON.stringify({ ok: true }))
  } catch (err) {
    const kind = err instanceof LembasError ? err.kind : 'not a LembasError'
    const message = String((err as Error).message)
    process.stdout.write(JSON.stringify({ ok: false, stage, kind, message }))
  }
} else {
  throw new Error(`unknown mode ${mode}`)
}
