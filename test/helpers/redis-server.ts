/**
 * A real Redis for tests. Uses $REDIS_URL when set (tests then share it, with unique scope names);
 * otherwise spawns `redis-server` on a free loopback port with AOF on, so kill() + restart()
 * keeps acknowledged data. A missing binary is an error, never a skip.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestRedis {
  url: string
  /** Stops the server (SIGTERM) and removes its data directory. */
  stop(): Promise<void>
  /** SIGKILL, like a crash. */
  kill(): void
  /** Starts it again (after a kill, or killing it first) on the same port and data directory. */
  restart(): Promise<void>
}

/** `spawn: true` ignores $REDIS_URL: for tests that must kill and restart the server. */
export async function startRedis(options: { spawn?: boolean } = {}): Promise<TestRedis> {
  const external = process.env.REDIS_URL
  if (external && !options.spawn) {
    const refuse = (): never => {
      throw new Error(
        'cannot kill or restart the server of $REDIS_URL; use startRedis({ spawn: true })',
      )
    }
    return { url: external, stop: async () => {}, kill: refuse, restart: async () => refuse() }
  }

  const dir = await mkdtemp(join(tmpdir(), 'lembas-redis-'))
  const port = await freePort()
  let child: ChildProcess | undefined

  const launch = async (): Promise<void> => {
    // appendfsync always: each acknowledged write is in the AOF first, so a SIGKILL loses none.
    const config = {
      port,
      bind: '127.0.0.1',
      save: '',
      appendonly: 'yes',
      appendfsync: 'always',
      dir,
      daemonize: 'no',
      loglevel: 'warning',
    }
    const args = Object.entries(config).flatMap(([k, v]) => [`--${k}`, String(v)])
    const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    child = proc
    // A test process that exits without stop() must not leave a server behind.
    const reap = (): void => void proc.kill('SIGKILL')
    process.once('exit', reap)
    proc.once('exit', () => process.off('exit', reap))
    // Redis logs to stdout; keep the start of it to explain an early exit.
    let log = ''
    const keep = (d: Buffer): void => void (log.length < 10_000 && (log += d.toString()))
    proc.stdout?.on('data', keep)
    proc.stderr?.on('data', keep)
    const failed = new Promise<never>((_, reject) => {
      proc.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'ENOENT'
            ? new Error('redis-server not found: apt-get install -y redis-server')
            : err,
        ),
      )
      proc.once('exit', (code, signal) =>
        reject(new Error(`redis-server exited early (${code ?? signal}): ${log}`)),
      )
    })
    failed.catch(() => {}) // only matters while waiting below
    await Promise.race([failed, waitForPong(port, 10_000)])
  }

  try {
    await launch()
  } catch (err) {
    child?.kill('SIGKILL')
    await rm(dir, { recursive: true, force: true })
    throw err
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    kill() {
      child?.kill('SIGKILL')
    },
    async restart() {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited(child)
      await launch()
    },
    async stop() {
      child?.kill('SIGTERM')
      await exited(child)
      await rm(dir, { recursive: true, force: true })
    },
  }
}

function exited(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

/** Redis cannot listen on port 0, so borrow a free port from the kernel first. */
function freePort(): Promise<number> {
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

async function waitForPong(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await pingOnce(port)) return
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`)
}

function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    let reply = ''
    const done = (ok: boolean): void => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(500, () => done(false))
    socket.once('error', () => done(false))
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.on('data', (d) => {
      reply += d.toString()
      // +PONG once ready; -LOADING while the AOF is replayed.
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'))
    })
  })
}
