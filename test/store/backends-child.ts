/**
 * Run by backends.test.ts in a process of its own: opens the store argv[2] names, then prints
 * which of the two backends' client libraries that process has loaded.
 */
import { createRequire } from 'node:module'
import { createStore } from '../../src/store/index.js'

const require = createRequire(import.meta.url)
const store = await createStore(process.argv[2]!, { idleTtlMs: 3_600_000 })
const loaded = new Set<string>()
for (const path of Object.keys(require.cache)) {
  const library = /node_modules\/(ioredis|better-sqlite3)\//.exec(path)?.[1]
  if (library) loaded.add(library)
}
await store.close()
process.stdout.write(JSON.stringify([...loaded].sort()))
