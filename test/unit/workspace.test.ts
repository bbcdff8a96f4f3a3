import assert from 'node:assert/strict'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import fsPromises, { open } from 'node:fs/promises'
import { execFileSync } from 'node:child_process'
import { syncBuiltinESMExports } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, mock, test } from 'node:test'
import { countFileLines, createWorkspace } from '../../src/workspace/index.js'
import { openedWithin } from '../../src/workspace/files.js'

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

  test('a folder swapped for a link out between the path check and the open: nothing is read', async () => {
    const swapped = join(root, 'swapped')
    const outside = join(base, 'swap-out')
    mkdirSync(swapped)
    mkdirSync(outside)
    writeFileSync(join(swapped, 'f.txt'), 'inside\n')
    writeFileSync(join(outside, 'f.txt'), 'OUTSIDE-SECRET\n')
    const ws = await createWorkspace([root])
    // The race made certain: once realpath has passed the folder, it becomes a link out (as a
    // swapper running beside the proxy would do), before the open.
    const realpath = fsPromises.realpath
    mock.method(fsPromises, 'realpath', async (path: string) => {
      const answer = await realpath(path)
      if (answer === join(swapped, 'f.txt')) {
        renameSync(swapped, swapped + '.real')
        symlinkSync(outside, swapped)
      }
      return answer
    })
    syncBuiltinESMExports()
    try {
      assert.equal(await ws.read('swapped/f.txt'), undefined)
    } finally {
      mock.restoreAll()
      syncBuiltinESMExports()
    }
    rmSync(swapped)
    renameSync(swapped + '.real', swapped)
    assert.equal((await ws.read('swapped/f.txt'))?.content, 'inside\n', 'and read once it is back')
  })

  test('openedWithin: the kernel names the opened file; elsewhere it must still be at the path', async () => {
    mkdirSync(join(root, 'dev-ino'))
    mkdirSync(join(base, 'dev-ino-out'))
    writeFileSync(join(root, 'dev-ino', 'f.txt'), 'inside\n')
    writeFileSync(join(base, 'dev-ino-out', 'f.txt'), 'outside\n')
    symlinkSync(join(base, 'dev-ino-out'), join(root, 'dev-ino-link'))
    const checked = join(root, 'dev-ino', 'f.txt')
    const viaLink = await open(join(root, 'dev-ino-link', 'f.txt'))
    const inside = await open(checked)
    try {
      const [outStat, inStat] = await Promise.all([viaLink.stat(), inside.stat()])
      // Without the kernel's answer: the opened file is not the one at the checked path.
      assert.equal(await openedWithin(viaLink.fd, outStat, checked, [root], false), false)
      assert.equal(await openedWithin(inside.fd, inStat, checked, [root], false), true)
      // Nor when a folder on the checked path is a link out now, naming the opened file.
      renameSync(join(root, 'dev-ino'), join(root, 'dev-ino.real'))
      symlinkSync(join(base, 'dev-ino-out'), join(root, 'dev-ino'))
      assert.equal(await openedWithin(viaLink.fd, outStat, checked, [root], false), false)
      if (existsSync('/proc/self/fd')) {
        // With it: the opened file is outside, whatever the path it was opened by.
        const viaPath = join(root, 'dev-ino-link', 'f.txt')
        assert.equal(await openedWithin(viaLink.fd, outStat, viaPath, [root], true), false)
        assert.equal(await openedWithin(inside.fd, inStat, checked, [root], true), true)
      }
    } finally {
      await viaLink.close()
      await inside.close()
    }
  })

  test('/proc, /sys and /dev are never read nor looked at, even under a root of /', async () => {
    const ws = await createWorkspace(['/'])
    for (const path of [
      '/proc/self/environ',
      '/proc/self/status',
      '/proc/version',
      '/sys/power/state',
    ])
      assert.equal(await ws.read(path), undefined, path)
    if (existsSync('/dev/shm')) {
      const shm = mkdtempSync('/dev/shm/lembas-ws-')
      try {
        writeFileSync(join(shm, 'f.txt'), 'in /dev\n')
        assert.equal(await ws.read(join(shm, 'f.txt')), undefined, '/dev/shm')
      } finally {
        rmSync(shm, { recursive: true, force: true })
      }
    }
    assert.equal(await ws.missing!('/proc/self/none'), false)
    assert.equal(await ws.missing!('/sys/none'), false)
    assert.equal((await ws.read(join(root, 'src', 'a.ts')))?.lines, 2, 'the rest of / is read')
  })

  test('line counts: a final newline ends a line, empty is zero', () => {
    assert.deepEqual(['', 'a', 'a\n', 'a\nb', 'a\n\n'].map(countFileLines), [0, 1, 1, 2, 2])
  })
})
