import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
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
