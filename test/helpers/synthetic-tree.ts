/**
 * A small project of fixed content in a temporary folder, for generated sessions that must not
 * change when this repository's own files do (bench/traces/generate.ts reads its src/ and top level).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Twelve TypeScript-like modules of 60 to 390 lines, and a package.json; returns the folder. */
export function syntheticTree(): string {
  const tree = mkdtempSync(join(tmpdir(), 'lembas-tree-'))
  mkdirSync(join(tree, 'src', 'parts'), { recursive: true })
  for (let f = 0; f < 12; f++) {
    const lines = [
      `// module ${f}: generated for replay tests`,
      `import { helper } from './util'`,
      '',
    ]
    for (let i = 0; lines.length < 60 + f * 30; i++)
      lines.push(
        `/** step ${i} of module ${f} */`,
        `export function step${f}_${i}(input: number): number {`,
        `  const scaled = helper(input) * ${(i % 7) + 1}`,
        `  return scaled > ${i * 13} ? scaled - ${f + i} : scaled + ${f * i}`,
        '}',
        '',
      )
    const dir = f % 3 === 0 ? 'src' : join('src', 'parts')
    writeFileSync(join(tree, dir, `module${f}.ts`), lines.join('\n') + '\n')
  }
  writeFileSync(join(tree, 'package.json'), JSON.stringify({ name: 'synthetic', version: '1.0.0' }))
  return tree
}
