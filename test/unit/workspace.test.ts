import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { countFileLines, createWorkspace } from '../../src/workspace/index.js'

describe('workspace', () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'lembas-ws-')))
  const root = join(base, 'root')
  mkdirSync(join(root, 'src'), { recursive: true })
  writeFileSync(join(root, 'src', 'a.ts'), 'one\ntwo\n')
  writeFileSync(join(base, 'secret.txt'), 'outside\n')
  symlinkSync(join(base, 'secret.txt'), join(root, 'link-out'))
  symlinkSync(join(root, 'src', 'a.ts'), join(root, 'link-in'))
  after(() => rmSync(base, { recursive: true, force: true }))

  test('reads a file inside a root, by relative or absolute path, with hash and line count', async () => {
    const ws = await createWorkspace([root])
    const byRelative = await ws.read('src/a.ts')
    const byAbsolute = await ws.read(join(root, 'src', 'a.ts'))
    assert.equal(byRelative?.absPath, join(root, 'src', 'a.ts'))
    assert.equal(byRelative?.lines, 2)
    assert.equal(byRelative?.sha256, byAbsolute?.sha256)
    assert.equal(
      (await ws.read('link-in'))?.absPath,
      join(root, 'src', 'a.ts'),
      'identity is the resolved path',
    )
  })

  test('never reads outside the roots: .., absolute paths, symlinks out, /proc, NUL', async () => {
    const ws = await createWorkspace([root])
    for (const path of [
      '../secret.txt',
      join(base, 'secret.txt'),
      'link-out',
      '/proc/self/environ',
      '/etc/passwd',
      'src/a.ts\0x',
      'src',
    ]) {
      assert.equal(await ws.read(path), undefined, path)
    }
  })

  test('a FIFO is no file: its read answers at once, and five of them leave reads working', async () => {
    const fifo = join(root, 'src', 'pipe.ts')
    execFileSync('mkfifo', [fifo])
    const ws = await createWorkspace([root])
    // Opened blocking, each would hold one of libuv's four threads until someone wrote to it.
    const reads = await Promise.all([1, 2, 3, 4, 5].map(() => ws.read('src/pipe.ts')))
    assert.deepEqual(reads, [undefined, undefined, undefined, undefined, undefined])
    assert.equal((await ws.read('src/a.ts'))?.lines, 2)
  })

  test('missing: nothing at a path inside a root; never looks outside it, nor through a link out', async () => {
    const ws = await createWorkspace([root])
    mkdirSync(join(base, 'outdir'), { recursive: true })
    symlinkSync(join(base, 'outdir'), join(root, 'dir-out'))
    for (const path of ['src/none.ts', join(root, 'nosuchdir', 'a.ts'), 'src/a.ts/under-a-file'])
      assert.equal(await ws.missing!(path), true, path)
    for (const path of [
      'src/a.ts',
      'src',
      'link-in',
      // Outside, or through a link out: nothing is known of it.
      '../none.ts',
      join(base, 'none.ts'),
      'dir-out/none.ts',
      '/nonexistent/dir/a.ts',
      'src/none\0.ts',
    ])
      assert.equal(await ws.missing!(path), false, path)
  })

  test('line counts: a final newline ends a line, empty is zero', () => {
    assert.deepEqual(['', 'a', 'a\n', 'a\nb', 'a\n\n'].map(countFileLines), [0, 1, 1, 2, 2])
  })
})
