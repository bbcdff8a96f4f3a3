import { createHash } from 'node:crypto'
import { constants, existsSync, readlinkSync, type Stats } from 'node:fs'
import { lstat, open, realpath, stat } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path'

export interface FileSnapshot {
  /** The real path (symlinks resolved), inside a workspace root. */
  readonly absPath: string
  readonly content: string
  readonly sha256: string
  readonly lines: number
}

export interface Workspace {
  readonly roots: readonly string[]
  /**
   * Reads a file the agent named, when it lies inside a root after resolving symlinks; anything
   * else (outside, missing, not a regular file, too large) is undefined: the proxy goes blind.
   */
  read(path: string): Promise<FileSnapshot | undefined>
  /**
   * Whether nothing is at a path that lies inside a root as written (no link followed): a read
   * of it showed no file's lines, whatever the agent printed. Outside the roots: false.
   */
  missing?(path: string): Promise<boolean>
}

export interface WorkspaceOptions {
  readonly maxFileBytes?: number
}

export async function createWorkspace(
  roots: readonly string[],
  options: WorkspaceOptions = {},
): Promise<Workspace> {
  const realRoots = await Promise.all(roots.map((root) => realpath(resolve(root))))
  const maxFileBytes = options.maxFileBytes ?? 16 * 1024 * 1024
  const fdPaths = hasFdPaths()
  return {
    roots: realRoots,
    async read(path) {
      const first = realRoots[0]
      if (first === undefined || path.includes('\0')) return undefined
      const candidate = isAbsolute(path) ? resolve(path) : resolve(first, path)
      let real: string
      try {
        real = await realpath(candidate)
      } catch {
        return undefined
      }
      return within(realRoots, real) && !kernelPath(real)
        ? readRegularFile(real, realRoots, maxFileBytes, fdPaths)
        : undefined
    },
    async missing(path) {
      const first = realRoots[0]
      if (first === undefined || path.includes('\0')) return false
      const candidate = isAbsolute(path) ? resolve(path) : resolve(first, path)
      if (!within(realRoots, candidate) || kernelPath(candidate)) return false
      // Its folder as it really is: a link out of the roots is never looked through.
      let folder: string
      try {
        folder = await realpath(dirname(candidate))
      } catch (error) {
        return gone(error)
      }
      if (!within(realRoots, folder) || kernelPath(folder)) return false
      try {
        await lstat(join(folder, basename(candidate)))
        return false
      } catch (error) {
        return gone(error)
      }
    },
  }
}

/** Whether a resolved path is a root or lies under one. */
function within(roots: readonly string[], path: string): boolean {
  return roots.some(
    (root) => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep),
  )
}

/**
 * Whether a resolved path is one of the kernel's own (procfs, sysfs, device files): never read,
 * whatever the roots. Their files pass as regular files of size 0 (`/proc/self/environ` holds the
 * proxy's environment, its keys included), so a root such as `/` would otherwise hand them out.
 */
function kernelPath(path: string): boolean {
  return ['/proc', '/sys', '/dev'].some((dir) => path === dir || path.startsWith(dir + '/'))
}

/** Whether an open file's own path can be asked of the kernel (`/proc/self/fd/N`, Linux). */
function hasFdPaths(): boolean {
  return process.platform === 'linux' && existsSync('/proc/self/fd')
}

/**
 * Whether the file open at `fd` is inside the roots, as the path check that came before it said.
 * That check (realpath, then within) and the open are two steps: a folder on the way swapped for
 * a link out in between is followed by the open (O_NOFOLLOW guards only the last name), and the
 * outside file would be read. So what was opened is asked again. On Linux the kernel names it
 * (`/proc/self/fd/N`, one readlink, no disk I/O, hence sync): it must lie inside a root and not
 * under /proc, /sys or /dev. Elsewhere (no /proc) the checked path must still resolve to itself
 * (a link put on the way and left there is caught) and name the opened file, same device and
 * inode (a link put there and taken away again is caught); a swap timed to fall between those two
 * calls as well is not: only the kernel's answer closes the window.
 */
export async function openedWithin(
  fd: number,
  opened: Stats,
  absPath: string,
  roots: readonly string[],
  fdPaths: boolean = hasFdPaths(),
): Promise<boolean> {
  if (fdPaths) {
    let real: string
    try {
      real = readlinkSync(`/proc/self/fd/${fd}`)
    } catch {
      return false
    }
    return within(roots, real) && !kernelPath(real)
  }
  try {
    const now = await stat(absPath)
    return now.dev === opened.dev && now.ino === opened.ino && (await realpath(absPath)) === absPath
  } catch {
    return false
  }
}

/** The error of a path where nothing is (or a file stands where a folder should). */
function gone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code
  return code === 'ENOENT' || code === 'ENOTDIR'
}

async function readRegularFile(
  absPath: string,
  roots: readonly string[],
  maxBytes: number,
  fdPaths: boolean,
): Promise<FileSnapshot | undefined> {
  let handle
  try {
    // Non-blocking: opening a FIFO for reading would otherwise wait, holding one of libuv's four
    // threads, until something writes to it (four such reads and every request waits); it is then
    // no regular file and never read. No link followed: absPath is the resolved path already.
    handle = await open(absPath, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
    const opened = await handle.stat()
    if (!opened.isFile() || opened.size > maxBytes) return undefined
    // The path was checked before the open; a folder swapped for a link out in between is not.
    if (!(await openedWithin(handle.fd, opened, absPath, roots, fdPaths))) return undefined
    const bytes = await handle.readFile()
    const content = bytes.toString('utf8')
    return {
      absPath,
      content,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      lines: countFileLines(content),
    }
  } catch {
    return undefined
  } finally {
    await handle?.close()
  }
}

/** A file's length in lines: a final newline ends the last line, it does not start one. */
export function countFileLines(content: string): number {
  if (content === '') return 0
  let lines = 1
  for (let i = content.indexOf('\n'); i !== -1; i = content.indexOf('\n', i + 1)) lines++
  return content.endsWith('\n') ? lines - 1 : lines
}
