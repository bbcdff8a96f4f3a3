import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startRedis } from '../helpers/redis-server.js'

const run = promisify(execFile)
const child = fileURLToPath(new URL('./backends-child.ts', import.meta.url))

/** The client libraries a fresh process has loaded once it opened the store `spec`. */
async function librariesFor(spec: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', child, spec])
  return JSON.parse(stdout) as string[]
}

// ioredis alone is about 10 MB of resident memory: a proxy on SQLite has no use for it.
test('each store loads its own client library only', { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-backends-'))
  const redis = await startRedis()
  t.after(async () => {
    await redis.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  assert.deepEqual(await librariesFor(`sqlite:${join(dir, 'store.db')}`), ['better-sqlite3'])
  assert.deepEqual(await librariesFor(redis.url), ['ioredis'])
  assert.deepEqual(await librariesFor('memory:'), [])
})
