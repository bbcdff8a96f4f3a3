/**
 * Sessions coming back to a restarted proxy, all at once: the new process's peak memory and the
 * time to answer them all, after a graceful stop (which hands the fast path's states on through
 * the store), after a kill of a process that saved its states in the background
 * (`--save-states-s 1`, killed once a save has passed) and after a kill of one that saves nothing
 * (`--save-states-s 0`), side by side in one run:
 *
 *   npm run build && node --import tsx bench/restart.ts [--sessions 64] [--size 1mb] [--runs 2]
 *
 * Each session sends two requests to a first process (the command line from `dist/`, a SQLite
 * file), which is then stopped (SIGTERM) or killed (SIGKILL); a second process on the same file
 * gets every session's third request together. Its peak RSS is the kernel's (`VmHWM`).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startCli, stopCli, type Running } from '../test/helpers/cli.js'
import { startFakeUpstream } from '../test/helpers/fake-upstream.js'
import { builtCli } from './children.js'
import { postSession } from './client.js'
import { sessionFor, sizeNamed } from './workload.js'

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '64' },
    size: { type: 'string', default: '1mb' },
    runs: { type: 'string', default: '2' },
  },
})
const size = sizeNamed(values.size)
const cli = builtCli()

const upstream = await startFakeUpstream()

/** The process's peak resident memory so far, in MB. */
function peakMb(proxy: Running): number {
  const status = readFileSync(`/proc/${proxy.child.pid}/status`, 'utf8')
  return Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024
}

interface Mode {
  readonly name: string
  readonly signal: 'SIGTERM' | 'SIGKILL'
  /** The first process's own flags. */
  readonly first: readonly string[]
  /** How long the first process runs on after the last request. */
  readonly settleMs: number
}

const MODES: readonly Mode[] = [
  { name: 'handed on (SIGTERM)', signal: 'SIGTERM', first: [], settleMs: 0 },
  {
    name: 'saved, then killed',
    signal: 'SIGKILL',
    first: ['--save-states-s', '1'],
    settleMs: 2500,
  },
  { name: 'killed, no saves', signal: 'SIGKILL', first: ['--save-states-s', '0'], settleMs: 0 },
]

async function run(mode: Mode, seed: number) {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-restart-'))
  // The bench's own idle collection would run between the load and the reading.
  const args = ['--port', '0', '--upstream', upstream.url, '--store', `sqlite:${dir}/s.db`]
  const start = (more: readonly string[] = []) =>
    startCli([cli, ...args, '--idle-collect-ms', '0', ...more], {}, {}, process.execPath)
  try {
    const sessions = Array.from({ length: Number(values.sessions) }, (_, s) =>
      sessionFor(size, seed + s, false),
    )
    const first = await start(mode.first)
    for (const [s, session] of sessions.entries()) {
      await postSession(first.url, session.base(), `r${s}`)
      await postSession(first.url, session.next(), `r${s}`)
    }
    await new Promise((resolve) => setTimeout(resolve, mode.settleMs))
    await stopCli(first, mode.signal)
    const second = await start()
    const idle = peakMb(second)
    const started = performance.now()
    await Promise.all(
      sessions.map((session, s) => postSession(second.url, session.next(), `r${s}`)),
    )
    const ms = performance.now() - started
    const peak = peakMb(second)
    await stopCli(second)
    return { idle, peak, ms }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const rows: string[] = []
try {
  for (let r = 0; r < Number(values.runs); r++) {
    for (const mode of MODES) {
      const { idle, peak, ms } = await run(mode, 7000 + 100 * r)
      const name = mode.name.padEnd(19)
      rows.push(
        `${name}  peak ${peak.toFixed(0).padStart(4)} MB (at start ${idle.toFixed(0)} MB)` +
          `  all answered in ${(ms / 1000).toFixed(1)} s`,
      )
      process.stderr.write(rows.at(-1) + '\n')
    }
  }
} finally {
  await upstream.close()
}
process.stdout.write(
  `${values.sessions} sessions of ${size.name} back at once after a restart:\n${rows.join('\n')}\n`,
)
