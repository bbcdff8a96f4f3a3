/**
 * `--workers N`: several processes serve one port on one SQLite file. A session's requests land
 * on any of them and its history still reaches the upstream byte-identical; /stats and /metrics
 * count every worker's requests, whichever worker answers; a worker that dies is started again;
 * a signal stops them all; the memory store, one per process, is refused.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { packageRoot } from '../../src/config/loop.js'
import { startProxyCli, stopCli } from '../helpers/cli.js'
import { DOORS, type Door, type DoorCall } from '../helpers/doors.js'
import { startFakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js'
import { prefixViolations } from '../helpers/model.js'

const run = promisify(execFile)
const STEPS = 6

function output(session: number, step: number): string {
  return Array.from({ length: 40 }, (_, i) => `s${session} step ${step} line ${i}`).join('\n')
}

/** The model: a Bash call per step, answered per session (told apart by the first user words). */
function script(door: Door) {
  const steps = new Map<string, number>()
  return (request: RecordedRequest) => {
    const who = JSON.stringify(request.json).match(/session (\d+)/)![1]!
    const step = steps.get(who) ?? 0
    steps.set(who, step + 1)
    if (step >= STEPS) return door.respond(request, { text: 'Done.' }, step)
    const call: DoorCall = { id: `call_${step}`, name: 'Bash', args: { command: `step ${step}` } }
    return door.respond(request, { calls: [call] }, step)
  }
}

/** A process's command line, for a message. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 200)
  } catch {
    return '(gone)'
  }
}

/** A signal to a process that may have exited already (the primary's own signal can be faster). */
function signalIfThere(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
  }
}

/** The proxy processes `pid` started: its workers (tsx may start an esbuild service beside them). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid
      } catch {
        return false
      }
    })
    .map(Number)
    .filter((child) => commandOf(child).includes('cli.'))
}

test('--workers 2: sessions on any worker keep their history, one /stats for all, a dead worker comes back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-workers-'))
  const upstreams = new Map<string, Awaited<ReturnType<typeof startFakeUpstream>>>()
  for (const door of DOORS) {
    const fake = await startFakeUpstream()
    fake.setScript(script(door))
    upstreams.set(door.name, fake)
  }
  const proxy = await startProxyCli(upstreams.get('chat')!.url, 'sqlite:' + join(dir, 'l.db'), [
    '--workers',
    '2',
    '--upstream-messages',
    upstreams.get('messages')!.url,
    '--upstream-responses',
    upstreams.get('responses')!.url,
  ])
  try {
    assert.match(proxy.stdout, /workers: 2 processes on one store/)
    let workers = childrenOf(proxy.child.pid!)
    for (let i = 0; i < 25 && workers.length !== 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      workers = childrenOf(proxy.child.pid!)
    }
    const described = workers.map((pid) => `${pid}: ${commandOf(pid)}`).join('\n')
    assert.equal(workers.length, 2, `two workers:\n${described}\n${proxy.stderr()}`)

    // Four sessions per door at once: their requests spread over both workers.
    let sent = 0
    const session = async (door: Door, n: number) => {
      const client = door.client({ stream: n % 2 === 0 })
      client.user(`session ${n}: work`)
      for (let step = 0; step <= STEPS; step++) {
        const answer = await client.send(proxy.url)
        sent++
        assert.equal(answer.status, 200, answer.raw.slice(0, 200))
        if (answer.calls.length === 0) return
        client.results(answer.calls, [output(n, step)])
      }
    }
    await Promise.all(DOORS.flatMap((door) => [0, 1, 2, 3].map((n) => session(door, n))))

    for (const door of DOORS) {
      const requests = upstreams.get(door.name)!.requests
      for (let n = 0; n < 4; n++) {
        const own = requests.filter((r) => r.body.includes(`session ${n}: work`))
        assert.equal(own.length, STEPS + 1)
        const where = { path: door.upstreamPath, field: door.historyField }
        assert.deepEqual(prefixViolations(own, where), [], `${door.name} session ${n}`)
        assert.match(own.at(-1)!.body, /\[#0006\]/, 'ids go on across workers')
      }
    }

    // Whichever worker answers, the figures are every worker's.
    const totals = await Promise.all(
      [0, 1, 2, 3].map(
        async () => ((await (await fetch(proxy.url + '/stats')).json()) as any).totals,
      ),
    )
    for (const t of totals) assert.equal(t.requests, sent, 'every request, every worker')
    assert.equal(totals[0].newResults, DOORS.length * 4 * STEPS)
    const metrics = await (await fetch(proxy.url + '/metrics')).text()
    const counted = [...metrics.matchAll(/^lembas_requests_total\{[^}]*\} (\d+)$/gm)]
    assert.equal(
      counted.reduce((sum, m) => sum + Number(m[1]), 0),
      sent,
    )
    // The workers report their caches every second.
    let gauges = metrics
    for (let i = 0; i < 30 && !/cache="splice"\} [1-9]/.test(gauges); i++) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      gauges = await (await fetch(proxy.url + '/metrics')).text()
    }
    assert.match(gauges, /lembas_cache_bytes\{cache="splice"\} [1-9]/, 'the workers’ caches')
    assert.match(
      gauges,
      /^lembas_cold_bodies_waiting 0$/m,
      'the workers’ cold-body budgets, summed',
    )

    // A write that finds the file locked by another process waits for it, and is counted.
    const client = DOORS[0]!.client({ stream: false })
    client.user('session 20: work')
    const first = await client.send(proxy.url)
    client.results(first.calls, [output(20, 0)])
    const holder = new Database(join(dir, 'l.db'))
    holder.exec('BEGIN IMMEDIATE')
    let answered = false
    const pending = client.send(proxy.url).finally(() => (answered = true))
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(answered, false, 'its new result waits for the lock')
    holder.exec('ROLLBACK')
    holder.close()
    assert.equal((await pending).status, 200)
    // Counted at once: /metrics has every worker send the store timings it holds first.
    const lockWaits =
      /^lembas_store_duration_seconds_count\{operation="lock_wait",ok="true"\} (\d+)$/m
    const waits = lockWaits.exec(await (await fetch(proxy.url + '/metrics')).text())
    assert.ok(waits && Number(waits[1]) >= 1, 'lock waits counted in /metrics')

    // A worker killed is started again (a connection it held fails, as with any crash).
    process.kill(workers[0]!, 'SIGKILL')
    const deadline = Date.now() + 20_000
    let now = childrenOf(proxy.child.pid!)
    while ((now.length < 2 || now.includes(workers[0]!)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      now = childrenOf(proxy.child.pid!)
    }
    assert.equal(now.length, 2, `a worker again: ${now}`)
    assert.match(proxy.stderr(), /"event":"worker-exited"/)
    // Serving again: a new connection for each of a few requests reaches both workers.
    for (let i = 0; i < 4; i++) {
      const client = DOORS[0]!.client({ stream: false })
      client.user(`session ${10 + i}: still there?`)
      const answer = await client.send(proxy.url)
      assert.equal(answer.status, 200, answer.raw.slice(0, 200))
    }
    // Ctrl-C in a terminal: every process of the group gets SIGINT, the workers twice (the
    // primary passes it on); all stop once, none is started again.
    const pid = proxy.child.pid!
    const exited = new Promise<number | null>((resolve) => proxy.child.once('exit', resolve))
    process.kill(pid, 'SIGINT')
    for (const worker of childrenOf(pid)) signalIfThere(worker, 'SIGINT')
    assert.equal(await exited, 0, 'the primary exits 0')
    assert.deepEqual(childrenOf(pid), [], 'no worker left after a stop')
    assert.equal(proxy.stderr().match(/"event":"worker-exited"/g)?.length, 1, 'only the killed one')
  } finally {
    const pid = proxy.child.pid!
    await stopCli(proxy)
    assert.deepEqual(childrenOf(pid), [], 'no worker left after a stop')
    for (const fake of upstreams.values()) await fake.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('--workers with the memory store is refused, saying why', async () => {
  const cli = ['--import', 'tsx', packageRoot() + 'src/cli.ts']
  const args = [...cli, '--workers', '2', '--store', 'memory:', '--port', '0']
  const failed = await run(process.execPath, args).then(
    () => assert.fail('it started'),
    (error: { code: number; stderr: string }) => error,
  )
  assert.equal(failed.code, 2)
  assert.match(failed.stderr, /--workers: the memory: store is one per process/)
})
