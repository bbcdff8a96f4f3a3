/**
 * Child processes of the benchmark: every server runs in its own process (so RSS and CPU are per
 * server), optionally pinned to a core with taskset, and every one is stopped at the end, on
 * Ctrl-C, on an error, and (through a detached reaper) even when the benchmark itself is killed.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { packageRoot } from '../src/config/loop.js'

export interface Child {
  name: string
  pid: number
  proc: ChildProcess
  /** The URL parsed from the ready line, when the child prints one. */
  url: string
  /** The last ~32 KB of stderr and stdout, to explain a failure. */
  output(): string
  /** Called with every complete stderr line. */
  onStderrLine(listener: (line: string) => void): void
  stop(): Promise<void>
}

const children = new Set<Child>()
let reaper: ChildProcess | undefined
let hasTaskset: boolean | undefined

export function tasksetAvailable(): boolean {
  if (hasTaskset === undefined) {
    try {
      execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' })
      hasTaskset = true
    } catch {
      hasTaskset = false
    }
  }
  return hasTaskset
}

/** Pins this process (all its threads) to a CPU list such as "0". */
export function pinSelf(cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(process.pid)], { stdio: 'ignore' })
}

/**
 * A detached watcher that SIGKILLs every registered child once this process is gone, however it
 * died (SIGKILL, OOM). It ignores SIGINT, so a Ctrl-C reaches it only after we have cleaned up.
 */
function startReaper(): ChildProcess {
  const code = `
    const parent = ${process.pid}; const pids = new Set(); const dirs = new Set()
    process.on('SIGINT', () => {}); process.on('SIGTERM', () => {})
    let buffered = ''
    process.stdin.on('data', (d) => {
      buffered += d
      const lines = buffered.split('\\n'); buffered = lines.pop()
      for (const l of lines) { if (l.startsWith('+')) pids.add(+l.slice(1)); else if (l.startsWith('-')) pids.delete(+l.slice(1)); else if (l.startsWith('dir:')) dirs.add(l.slice(4)); else if (l === 'exit') process.exit(0) }
    })
    const sweep = () => {
      for (const p of pids) { try { process.kill(p, 'SIGKILL') } catch {} }
      setTimeout(() => { for (const d of dirs) { try { require('node:fs').rmSync(d, { recursive: true, force: true }) } catch {} } process.exit(0) }, 200)
    }
    process.stdin.on('end', sweep)
    setInterval(() => { try { process.kill(parent, 0) } catch { sweep() } }, 500)
  `
  const proc = spawn(process.execPath, ['-e', code], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  })
  proc.unref()
  return proc
}

function tellReaper(line: string): void {
  reaper ??= startReaper()
  reaper.stdin?.write(line + '\n')
}

/** A folder the reaper removes too if this process dies without cleaning up. */
export function reapFolder(path: string): void {
  tellReaper('dir:' + path)
}

export interface SpawnOptions {
  name: string
  command: string
  args: string[]
  cwd?: string
  env?: NodeJS.ProcessEnv
  /** CPU list for taskset ("1"), or undefined for no pinning. */
  cpus?: string | undefined
  /** A regexp for the stdout line that says the server is ready; group 1 is its URL. */
  ready?: RegExp
  /** Or a TCP port to poll until it accepts connections. */
  readyPort?: number
  timeoutMs?: number
}

export async function spawnChild(options: SpawnOptions): Promise<Child> {
  const pinned = options.cpus !== undefined && tasksetAvailable()
  const command = pinned ? 'taskset' : options.command
  // taskset execs the command, so the pid is the server's own.
  const args = pinned ? ['-c', options.cpus!, options.command, ...options.args] : options.args
  const proc = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const keep = (data: Buffer) => {
    output += data.toString()
    if (output.length > 64_000) output = output.slice(-32_000)
  }
  const lineListeners: ((line: string) => void)[] = []
  let partial = ''
  proc.stderr!.on('data', (data: Buffer) => {
    keep(data)
    if (lineListeners.length === 0) return
    partial += data.toString()
    const lines = partial.split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) for (const listener of lineListeners) listener(line)
  })
  let stdoutText = ''
  proc.stdout!.on('data', (data: Buffer) => {
    keep(data)
    if (stdoutText.length < 16_000) stdoutText += data.toString()
  })

  let exited = false
  const exitPromise = new Promise<void>((resolve) =>
    proc.once('exit', () => {
      exited = true
      resolve()
    }),
  )
  const child: Child = {
    name: options.name,
    pid: proc.pid ?? -1,
    proc,
    url: '',
    output: () => output,
    onStderrLine: (listener) => void lineListeners.push(listener),
    async stop() {
      if (!exited) {
        proc.kill('SIGTERM')
        const timer = setTimeout(() => proc.kill('SIGKILL'), 3000)
        await exitPromise
        clearTimeout(timer)
      }
      children.delete(child)
      tellReaper('-' + child.pid)
    },
  }
  children.add(child)
  if (child.pid > 0) tellReaper('+' + child.pid)

  const timeoutMs = options.timeoutMs ?? 30_000
  const deadline = Date.now() + timeoutMs
  const failed = new Promise<never>((_, reject) => {
    proc.once('error', (error) => reject(new Error(`${options.name}: ${error.message}`)))
    void exitPromise.then(() =>
      reject(new Error(`${options.name} exited before it was ready:\n${output.slice(-4000)}`)),
    )
  })
  failed.catch(() => {})
  const ready = async (): Promise<void> => {
    while (Date.now() < deadline) {
      if (options.ready) {
        const match = options.ready.exec(stdoutText)
        if (match) {
          child.url = match[1] ?? ''
          return
        }
      } else if (options.readyPort !== undefined && (await canConnect(options.readyPort))) {
        child.url = `http://127.0.0.1:${options.readyPort}`
        return
      }
      await new Promise((r) => setTimeout(r, 25))
    }
    throw new Error(`${options.name} not ready within ${timeoutMs} ms:\n${output.slice(-4000)}`)
  }
  try {
    await Promise.race([ready(), failed])
  } catch (error) {
    await child.stop()
    throw error
  }
  return child
}

/** Stops every child still running: SIGTERM, then SIGKILL after 3 s. */
export async function stopAll(): Promise<void> {
  await Promise.allSettled([...children].map((child) => child.stop()))
  if (reaper) {
    reaper.stdin?.write('exit\n')
    reaper.stdin?.end()
    reaper = undefined
  }
}

/** For process 'exit': synchronous, so only SIGKILL. */
export function killAllNow(): void {
  for (const child of children) {
    try {
      child.proc.kill('SIGKILL')
    } catch {
      // already gone
    }
  }
}

export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(500, () => done(false))
    socket.once('error', () => done(false))
    socket.once('connect', () => done(true))
  })
}

/** Borrows a free loopback port from the kernel (for servers that cannot listen on port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      )
    })
  })
}

/** A process and every process it started (`--workers`), found through /proc. */
export function treeOf(pid: number): number[] {
  const parents = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid]
  for (let i = 0; i < tree.length; i++)
    for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child)
  return tree
}

/**
 * VmRSS and VmHWM (peak RSS) of a process and its children, summed, in bytes (the sum of peaks
 * bounds the peak of the sum from above); undefined once it is gone.
 */
export function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  let total: { rss: number; hwm: number } | undefined
  for (const one of treeOf(pid)) {
    try {
      const status = readFileSync(`/proc/${one}/status`, 'utf8')
      const kb = (field: string) =>
        Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
      total = {
        rss: (total?.rss ?? 0) + kb('VmRSS') * 1024,
        hwm: (total?.hwm ?? 0) + kb('VmHWM') * 1024,
      }
    } catch {
      if (one === pid) return undefined
    }
  }
  return total
}

/** Resets the peak RSS (VmHWM) of a process and its children; false where the kernel refuses. */
export function resetPeak(pid: number): boolean {
  try {
    for (const one of treeOf(pid)) writeFileSync(`/proc/${one}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

let clockTicks: number | undefined

/** CPU time (user + system) a process and its children have used so far, in milliseconds. */
export function cpuMsOf(pid: number): number | undefined {
  try {
    clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100
  } catch {
    clockTicks = 100
  }
  let ticks = 0
  for (const one of treeOf(pid)) {
    try {
      const stat = readFileSync(`/proc/${one}/stat`, 'utf8')
      // Fields after the command (which may contain spaces) start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      if (one === pid) return undefined
    }
  }
  return (ticks * 1000) / clockTicks
}

/** The command line as `npm start` runs it (`dist/`); an error when it was not built. */
export function builtCli(): string {
  const cli = packageRoot() + 'dist/src/cli.js'
  if (!existsSync(cli)) throw new Error('no dist/: run npm run build first')
  return cli
}

/**
 * The full collections V8 started itself in a `node --trace-gc` log: not the proxy's own `gc()`
 * calls (the idle and cold collections), which V8 calls "testing".
 */
export function fullCollections(trace: string): number {
  return trace
    .split('\n')
    .filter((line) => line.includes('Mark-Compact') && !line.includes('testing')).length
}
