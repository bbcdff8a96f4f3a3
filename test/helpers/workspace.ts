import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A scratch project: app.ts of 340 lines, util.ts, and an empty notes.txt. */
export function makeProject(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'lembas-project-')))
  const app =
    Array.from({ length: 340 }, (_, i) => `export const line${i + 1} = ${i + 1} // app`).join(
      '\n',
    ) + '\n'
  writeFileSync(join(dir, 'app.ts'), app)
  writeFileSync(join(dir, 'util.ts'), 'export function util() {\n  return 1\n}\n')
  writeFileSync(join(dir, 'notes.txt'), '')
  return dir
}

/** The first 8 hex digits of a file's SHA-256, as a read's bracket shows them. */
export function sha8(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 8)
}
