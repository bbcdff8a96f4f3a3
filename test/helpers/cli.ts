/** The real command line as a user starts it: `lembas-proxy` in a child process. */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { connect } from 'node:net'
import { packageRoot } from '../../src/config/loop.js'

export interface Running {
  readonly child: ChildProcess
  readonly url: string
  readonly stdout: string
  /** What it logged so far (JSON lines on stderr). */
  stderr(): string
}

/**
 * Starts `lembas-proxy ARGS` (from the repository's source, or the `command` given: an installed
 * one; with `env` over this process's and as `user` when given) and resolves with a loopback URL
 * once it listens; a test process that exits first does not leave it behind.
 */
export async function startCli(
  args: string[],
  env: Record<string, string> = {},
  user: { uid?: number; gid?: number } = {},
  command?: string,
): Promise<Running> {
  const child = spawn(
    command ?? process.execPath,
    command ? args : ['--import', 'tsx', packageRoot() + 'src/cli.ts', ...args],
    {
      cwd: packageRoot(),
      env: { ...process.env, LEMBAS_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...user,
    },
  )
  const reap = (): void => void child.kill('SIGKILL')
  process.once('exit', reap)
  child.once('exit', () => process.off('exit', reap))
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      stdout += chunk
      // Bound beyond loopback (0.0.0.0), it is still reached on loopback.
      const match = /^lembas-proxy listening on http:\/\/(\S+):(\d+) -> (\S+)$/m.exec(stdout)
      if (match)
        resolve({ child, url: `http://127.0.0.1:${match[2]}`, stdout, stderr: () => stderr })
    })
    child.once('exit', (code, signal) => reject(new Error(`exited ${code ?? signal}: ${stderr}`)))
  })
}

export async function stopCli(running: Running, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (running.child.exitCode !== null) return
  const exited = once(running.child, 'exit')
  running.child.kill(signal)
  await exited
}

/** `lembas-proxy --port 0 --upstream UPSTREAM --store STORE …more`, as a user starts it. */
export function startProxyCli(
  upstream: string,
  store: string,
  more: string[] = [],
): Promise<Running> {
  return startCli(['--port', '0', '--upstream', upstream, '--store', store, ...more])
}

/** What a server at `url` answers a WebSocket upgrade of `/v1/responses` (as Codex sends it). */
export async function upgradeAnswer(url: string): Promise<string> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  socket.write(
    'GET /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: Upgrade\r\n' +
      'upgrade: websocket\r\nsec-websocket-version: 13\r\n' +
      'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nauthorization: Bearer k\r\n\r\n',
  )
  let answer = ''
  for await (const chunk of socket) answer += String(chunk)
  return answer
}
