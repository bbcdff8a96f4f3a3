/**
 * lembas-proxy's benchmark: one run, every server a child process on loopback, a fixed seed.
 *
 *   npm run bench                                   # everything (~5 minutes on 2 cores)
 *   npm run bench -- --only lembas-sqlite,floor --sizes 1mb --phases latency
 *   npm run bench -- --only lembas-sqlite,floor --sizes 10kb,1mb --phases doors   # per door
 *
 * See bench/README.md for what each figure means and how it is measured.
 */
import { formatFigures, runConcurrency } from './concurrency.js'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { Client, Pool, request, type Dispatcher } from 'undici'
import {
  cpuMsOf,
  freePort,
  killAllNow,
  memoryOf,
  pinSelf,
  reapFolder,
  resetPeak,
  spawnChild,
  stopAll,
  tasksetAvailable,
  type Child,
} from './children.js'
import {
  dispatcherFor,
  headersFor,
  round,
  send,
  summarize,
  type Sample,
  type Summary,
  type Target,
} from './client.js'
import { SIZES, seedOf, sessionFor, type AgentSession, type SizeClass } from './workload.js'
import {
  DOORS,
  doorLogs,
  doorsChecks,
  doorsFloorChecks,
  doorsPhase,
  doorsTables,
  type DoorsPhase,
  type LogEvent,
} from './doors.js'

const REPO = fileURLToPath(new URL('..', import.meta.url))
const PROXIES = [
  'floor',
  'lembas-sqlite',
  'lembas-redis',
  'lembas-workers',
  'lembas-workers-redis',
  'portkey',
] as const
/** lembas with `--workers`: run only when asked for, as they need free cores to mean anything. */
const WORKERS = (name: string) => name.startsWith('lembas-workers')
/** lembas on Redis (the others run on a SQLite file). */
const ON_REDIS = (name: string) => name === 'lembas-redis' || name === 'lembas-workers-redis'
const PHASES = [
  'latency',
  'stream',
  'doors',
  'doors-stream',
  'throughput',
  'rss',
  'concurrency',
] as const
const LEMBAS = (name: string) => name.startsWith('lembas-')

// ---------------------------------------------------------------------------------------------
// Options

const HELP = `Usage: node --import tsx bench/run.ts [options]   (or: npm run bench -- [options])

  --only LIST          proxies to run besides direct (default: all but the two workers ones):
                       ${PROXIES.join(',')}
  --sizes LIST         body sizes: ${Object.keys(SIZES).join(',')} (default: all; the doors
                       phases: 10kb,1mb unless --sizes is given)
  --phases LIST        ${PHASES.join(',')} (default: all)
  --doors LIST         front doors of the doors phases: ${DOORS.join(',')} (default: all)
  --iterations N       measured iterations per size, overriding 200/60/20 (streaming: half;
                       the doors phases: 400/120/40)
  --duration S         seconds per throughput point (default 5)
  --concurrency LIST   throughput concurrencies (default 1,8,32,128)
  --rss-sessions N     concurrent sessions of the RSS run (default 64)
  --rss-kb N           history size of each of those sessions, in KB (default 1024)
  --rss-steps N        steps each of those sessions takes after its first request (default 5)
  --rss-settle S       after that load, the lowest RSS over the next S seconds (default 20; 0: none):
                       the heap shrinks some seconds after the allocations stop (V8's memory
                       reducer on Node 20, lembas' --idle-collect-ms on every Node)
  --seed N             workload seed (default 20261202)
  --no-pin             do not pin servers to cores with taskset
  --lembas-dist        run lembas from dist/src/cli.js (npm run build first) instead of tsx
  --lembas-workers N   --workers of lembas-workers (on SQLite) and lembas-workers-redis
                       (default 2); unpinned: their workers use every core (with the client
                       and the fake upstream)
  --log-level LEVEL    lembas's --log-level (default: its own default, info)
  --lembas-env N=V     an environment variable for the lembas processes only (repeatable), e.g.
                       MALLOC_MMAP_THRESHOLD_=131072
  --out FILE           results file (default bench/results.json)
  --help
`

function options() {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      sizes: { type: 'string' },
      phases: { type: 'string' },
      doors: { type: 'string' },
      iterations: { type: 'string' },
      duration: { type: 'string' },
      concurrency: { type: 'string' },
      'rss-sessions': { type: 'string' },
      'rss-kb': { type: 'string' },
      'rss-steps': { type: 'string' },
      'rss-settle': { type: 'string' },
      seed: { type: 'string' },
      'no-pin': { type: 'boolean' },
      'lembas-dist': { type: 'boolean' },
      'lembas-workers': { type: 'string' },
      'log-level': { type: 'string' },
      'lembas-env': { type: 'string', multiple: true },
      out: { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  })
  if (values.help) {
    process.stdout.write(HELP)
    process.exit(0)
  }
  const list = (value: string | undefined, all: readonly string[], what: string): string[] => {
    if (value === undefined) return [...all]
    const items = value
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean)
    for (const item of items)
      if (!all.includes(item))
        throw new Error(`--${what}: unknown "${item}" (known: ${all.join(', ')})`)
    return all.filter((item) => items.includes(item))
  }
  const int = (value: string | undefined, fallback: number, what: string, least = 1): number => {
    if (value === undefined) return fallback
    const n = Number(value)
    if (!Number.isFinite(n) || n < least)
      throw new Error(`--${what}: not a number of at least ${least}: ${value}`)
    return n
  }
  return {
    proxies: list(
      values.only ?? PROXIES.filter((name) => !WORKERS(name)).join(','),
      PROXIES,
      'only',
    ),
    sizes: list(values.sizes, Object.keys(SIZES), 'sizes'),
    // Each request of the Messages and Responses doors takes the full path today: at 8 MB that
    // is most of a second, so the doors phases take 8 MB only when asked to.
    doorSizes: list(values.sizes ?? '10kb,1mb', Object.keys(SIZES), 'sizes'),
    phases: new Set(list(values.phases, PHASES, 'phases')),
    doors: list(values.doors, DOORS, 'doors') as (typeof DOORS)[number][],
    iterations:
      values.iterations === undefined ? undefined : int(values.iterations, 0, 'iterations'),
    durationMs: int(values.duration, 5, 'duration') * 1000,
    concurrency: (values.concurrency ?? '1,8,32,128')
      .split(',')
      .map((c) => int(c, 1, 'concurrency')),
    rssSessions: int(values['rss-sessions'], 64, 'rss-sessions'),
    rssKb: int(values['rss-kb'], 1024, 'rss-kb'),
    rssSteps: int(values['rss-steps'], 5, 'rss-steps'),
    rssSettleMs: int(values['rss-settle'], 20, 'rss-settle', 0) * 1000,
    seed: int(values.seed, 20261202, 'seed'),
    pin: !values['no-pin'],
    lembasDist: values['lembas-dist'] === true,
    lembasWorkers: Number(values['lembas-workers'] ?? 2),
    logLevel: values['log-level'],
    lembasEnv: Object.fromEntries(
      (values['lembas-env'] ?? []).map((pair) => {
        const at = pair.indexOf('=')
        if (at <= 0) throw new Error(`--lembas-env wants NAME=VALUE, not ${pair}`)
        return [pair.slice(0, at), pair.slice(at + 1)]
      }),
    ),
    out: values.out ?? join(REPO, 'bench', 'results.json'),
  }
}
type Options = ReturnType<typeof options>

// ---------------------------------------------------------------------------------------------
// Servers

interface Server {
  target: Target
  child?: Child
  /** lembas: its `request` log events, tagged with the phase that was running. */
  events: (LogEvent & { stubs: number; rebuildMs: number })[]
}

interface Env {
  opts: Options
  tmp: string
  fakeUrl: string
  fake: Child
  redis?: { child: Child; url: string; client: Redis }
  /** taskset CPU list for the servers under test, or undefined. */
  proxyCpus: string | undefined
  otherCpus: string | undefined
  label: string
}

const tsx = ['--import', 'tsx']

async function startFake(env: Pick<Env, 'otherCpus'>): Promise<Child> {
  return spawnChild({
    name: 'fake-upstream',
    command: process.execPath,
    args: [...tsx, 'bench/fake-upstream.ts', '0'],
    cwd: REPO,
    cpus: env.otherCpus,
    ready: /fake-upstream listening on (http:\/\/\S+)/,
  })
}

async function startRedis(env: Env): Promise<NonNullable<Env['redis']>> {
  const port = await freePort()
  const child = await spawnChild({
    name: 'redis-server',
    command: 'redis-server',
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    cpus: env.otherCpus,
    readyPort: port,
    timeoutMs: 10_000,
  })
  const url = `redis://127.0.0.1:${port}`
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 3 })
  const deadline = Date.now() + 10_000
  for (;;) {
    try {
      await client.connect()
      await client.ping()
      break
    } catch (error) {
      if (Date.now() > deadline) throw error
      client.disconnect()
      await sleep(50)
    }
  }
  return { child, url, client }
}

async function startProxy(env: Env, name: string, tag = ''): Promise<Server> {
  const server: Server = {
    target: { name, url: '', headers: {}, stateful: LEMBAS(name) },
    events: [],
  }
  let child: Child
  if (name === 'floor') {
    child = await spawnChild({
      name,
      command: process.execPath,
      args: [...tsx, 'bench/passthrough.ts', env.fakeUrl + '/v1'],
      cwd: REPO,
      cpus: env.proxyCpus,
      ready: /passthrough listening on (http:\/\/\S+)/,
    })
  } else if (name === 'portkey') {
    const port = await freePort()
    child = await spawnChild({
      name,
      command: process.execPath,
      args: [
        '--import',
        './bench/portkey-preload.mjs',
        'node_modules/@portkey-ai/gateway/build/start-server.js',
        `--port=${port}`,
        '--headless',
      ],
      cwd: REPO,
      cpus: env.proxyCpus,
      ready: /Ready for connections/,
    })
    child.url = `http://127.0.0.1:${port}`
    server.target.headers = {
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': env.fakeUrl + '/v1',
    }
  } else {
    const store = ON_REDIS(name) ? env.redis!.url : `sqlite:${join(env.tmp, `store${tag}.db`)}`
    const entry = env.opts.lembasDist ? ['dist/src/cli.js'] : [...tsx, 'src/cli.ts']
    const args = [...entry, '--host', '127.0.0.1', '--port', '0']
    args.push('--upstream', env.fakeUrl + '/v1', '--store', store)
    const workers = WORKERS(name)
    if (workers) args.push('--workers', String(env.opts.lembasWorkers))
    if (env.opts.logLevel) args.push('--log-level', env.opts.logLevel)
    child = await spawnChild({
      name,
      command: process.execPath,
      args,
      cwd: REPO,
      env: { ...process.env, ...env.opts.lembasEnv },
      // Workers are there to use more than one core.
      cpus: workers ? undefined : env.proxyCpus,
      ready: /lembas-proxy listening on (http:\/\/\S+) ->/,
    })
    child.onStderrLine((line) => {
      // Every door's `request` line; before src/doors, the Responses door logged only `rebuilt`
      // (at debug level), and the doors were told by `format` rather than `door`.
      const responses = line.includes('"event":"rebuilt"') && line.includes('"format":"responses"')
      if (!line.includes('"event":"request"') && !responses) return
      try {
        const event = JSON.parse(line) as {
          event: string
          door?: string
          format?: string
          newResults?: number
          stubs?: number
          rebuild_ms?: number
        }
        server.events.push({
          label: env.label,
          event: event.event,
          door: event.door ?? event.format,
          newResults: event.newResults ?? NaN,
          stubs: event.stubs ?? NaN,
          rebuildMs: event.rebuild_ms ?? NaN,
        })
      } catch {
        // not a JSON line
      }
    })
  }
  server.child = child
  server.target.url = child.url
  server.target.pid = child.pid
  return server
}

// ---------------------------------------------------------------------------------------------
// Redis command accounting (what lembas-redis asked of its store)

interface RedisSnapshot {
  calls: Record<string, number>
  netIn: number
  netOut: number
  replyBytes: number
}

async function redisSnapshot(client: Redis): Promise<RedisSnapshot> {
  const text = (await client.call('INFO', 'commandstats', 'stats')) as string
  const calls: Record<string, number> = {}
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    if (match[1] !== 'info') calls[match[1]!] = Number(match[2])
  const stat = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(text)?.[1] ?? 0)
  return {
    calls,
    netIn: stat('total_net_input_bytes'),
    netOut: stat('total_net_output_bytes'),
    replyBytes: Buffer.byteLength(text) + 16,
  }
}

class RedisTally {
  calls: Record<string, number> = {}
  netIn = 0
  netOut = 0
  requests = 0
  private last: RedisSnapshot | undefined
  constructor(private readonly client: Redis | undefined) {}
  async mark(): Promise<void> {
    if (this.client) this.last = await redisSnapshot(this.client)
  }
  /** Adds what happened since mark() to the tally, for `requests` lembas-redis requests. */
  async add(requests: number): Promise<void> {
    if (!this.client || !this.last) return
    const now = await redisSnapshot(this.client)
    for (const [name, calls] of Object.entries(now.calls)) {
      const delta = calls - (this.last.calls[name] ?? 0)
      if (delta > 0) this.calls[name] = (this.calls[name] ?? 0) + delta
    }
    // The counters include our own INFO: its ~40-byte query and the previous reply.
    this.netIn += Math.max(0, now.netIn - this.last.netIn - 40)
    this.netOut += Math.max(0, now.netOut - this.last.netOut - this.last.replyBytes)
    this.requests += requests
    this.last = undefined
  }
  perRequest() {
    const n = Math.max(this.requests, 1)
    const calls: Record<string, number> = {}
    for (const [name, count] of Object.entries(this.calls)) calls[name] = round(count / n, 2)
    return {
      requests: this.requests,
      callsPerRequest: calls,
      roundTripsPerRequest: round(
        ((this.calls['hmget'] ?? 0) + (this.calls['evalsha'] ?? 0) + (this.calls['eval'] ?? 0)) / n,
        2,
      ),
      readsPerRequest: round((this.calls['hmget'] ?? 0) / n, 2),
      writeScriptsPerRequest: round(
        ((this.calls['evalsha'] ?? 0) + (this.calls['eval'] ?? 0)) / n,
        2,
      ),
      bytesToRedisPerRequest: Math.round(this.netIn / n),
      bytesFromRedisPerRequest: Math.round(this.netOut / n),
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Latency and streaming first byte: alternating targets, paired with direct

interface LatencyRow {
  target: string
  total: Summary
  ttfb: Summary
  added: Summary
  addedTtfb: Summary
  errors: number
}

async function alternating(
  env: Env,
  servers: Server[],
  size: SizeClass,
  stream: boolean,
  iterations: number,
  label: string,
  tally?: RedisTally,
) {
  const targets = servers.map((s) => s.target)
  const clients = new Map<string, Dispatcher>(targets.map((t) => [t.name, dispatcherFor(t, 1)]))
  const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]))
  const errors = new Map<string, number>(targets.map((t) => [t.name, 0]))
  const bodyBytes: number[] = []
  const deltaBytes: number[] = []
  let firstError: string | undefined
  const hit = async (target: Target, session: string, body: Buffer): Promise<Sample> => {
    const sample = await send(clients.get(target.name)!, headersFor(target, session), body)
    if (sample.status !== 200) {
      errors.set(target.name, errors.get(target.name)! + 1)
      firstError ??= `${target.name} answered ${sample.status}: ${sample.text}`
    }
    return sample
  }
  let iteration = 0
  for (let s = 0; iteration < iterations; s++) {
    const session = sessionFor(
      size,
      seedOf(env.opts.seed, label, size.name, stream ? 1 : 0, s),
      stream,
    )
    const name = `bench-${label}-${size.name}-${stream ? 's' : 'n'}-${s}`
    // The session's first request, unmeasured: afterwards lembas knows the whole history.
    env.label = `${label}:prime`
    const settled = logMark(env, servers)
    for (const target of targets) if (target.stateful) await hit(target, name, session.base())
    await settled(1)
    env.label = label
    await tally?.mark()
    let measured = 0
    for (let k = 0; k < size.sessionSteps && iteration < iterations; k++, iteration++, measured++) {
      const body = session.next()
      bodyBytes.push(body.length)
      deltaBytes.push(session.lastDeltaBytes)
      // A B C … then B C … A: each target goes first equally often.
      for (let j = 0; j < targets.length; j++) {
        const target = targets[(iteration + j) % targets.length]!
        samples.get(target.name)!.push(await hit(target, name, body))
      }
    }
    // Every line of this session in before the next one's mark (and before the store's counters).
    await settled(1 + measured)
    await tally?.add(measured)
  }
  await Promise.all([...clients.values()].map((c) => c.close()))
  const direct = samples.get('direct')!
  const rows: LatencyRow[] = targets.map((target) => {
    const mine = samples.get(target.name)!
    return {
      target: target.name,
      total: summarize(mine.map((s) => s.totalMs)),
      ttfb: summarize(mine.map((s) => s.ttfbMs)),
      added: summarize(mine.map((s, i) => s.totalMs - direct[i]!.totalMs)),
      addedTtfb: summarize(mine.map((s, i) => s.ttfbMs - direct[i]!.ttfbMs)),
      errors: errors.get(target.name)!,
    }
  })
  return { rows, bodyBytes: summarize(bodyBytes), deltaBytes: summarize(deltaBytes), firstError }
}

async function latencyPhase(env: Env, servers: Server[], size: SizeClass, stream: boolean) {
  const given = env.opts.iterations
  const n = stream
    ? given === undefined
      ? size.streamIterations
      : Math.max(2, Math.round(given / 2))
    : (given ?? size.iterations)
  const kind = stream ? 'stream' : 'latency'
  log(`${kind} ${size.name}: warm-up ${size.warmup}, then ${n} alternating iterations`)
  await alternating(env, servers, size, stream, size.warmup, `warm-${kind}`)
  const redisServer = servers.find((s) => s.target.name === 'lembas-redis')
  const tally = new RedisTally(redisServer ? env.redis?.client : undefined)
  const peaks = beginPeaks(servers)
  const started = performance.now()
  const result = await alternating(env, servers, size, stream, n, `${kind}-${size.name}`, tally)
  const seconds = (performance.now() - started) / 1000
  if (result.firstError) log(`  first error: ${result.firstError}`)
  return {
    kind,
    size: size.name,
    iterations: n,
    seconds: round(seconds, 1),
    bodyBytes: result.bodyBytes,
    newBytesPerRequest: result.deltaBytes,
    rows: result.rows,
    store: redisServer ? tally.perRequest() : undefined,
    lembas: lembasStats(servers, `${kind}-${size.name}`),
    peakRss: endPeaks(servers, peaks),
  }
}

// ---------------------------------------------------------------------------------------------
// Throughput: a closed loop of `c` workers for a fixed time, 10 KB session bodies

/** Sessions for one stateful target; each is used for `steps` requests after its first one. */
class SessionPool {
  private next = 0
  private readonly ready: { session: AgentSession; name: string }[] = []
  cold = 0
  primeErrors = 0
  constructor(
    private readonly env: Env,
    private readonly target: Target,
    private readonly size: SizeClass,
  ) {}
  private make() {
    const i = this.next++
    const session = sessionFor(this.size, seedOf(this.env.opts.seed, 'tp', i), false)
    return { session, name: `bench-tp-${i}` }
  }
  /** Sends the first request of `count` new sessions, unmeasured, 16 at a time. */
  async prime(count: number): Promise<void> {
    const pool = new Pool(this.target.url, { connections: 16 })
    const made = Array.from({ length: count }, () => this.make())
    let i = 0
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (i < made.length) {
          const item = made[i++]!
          const sample = await send(pool, headersFor(this.target, item.name), item.session.base())
          if (sample.status === 200) this.ready.push(item)
          else if (this.primeErrors++ === 0)
            log(`  priming ${this.target.name}: ${sample.status} ${sample.text}`)
        }
      }),
    )
    await pool.close()
  }
  /** A primed session, or a new one whose first request the caller must send (and count). */
  take(): { session: AgentSession; name: string; cold: boolean } {
    const item = this.ready.shift()
    if (item) return { ...item, cold: false }
    this.cold++
    return { ...this.make(), cold: true }
  }
  get available(): number {
    return this.ready.length
  }
}

/** For stateless targets: the same kind of bodies, built once and cycled. */
function bodyCycle(env: Env, size: SizeClass): Buffer[] {
  const bodies: Buffer[] = []
  for (let i = 0; i < 100; i++) {
    const session = sessionFor(size, seedOf(env.opts.seed, 'tp', i), false)
    for (let k = 0; k < size.sessionSteps; k++) bodies.push(session.next())
  }
  return bodies
}

async function loadRun(
  server: Server,
  concurrency: number,
  durationMs: number,
  source: { pool?: SessionPool; bodies?: Buffer[] },
  steps: number,
) {
  const target = server.target
  // One connection per worker, as an agent sends a session's requests on its own connection:
  // with `--workers` a session then stays on the worker its connection went to, as it would.
  const clients = Array.from(
    { length: concurrency },
    () => new Client(target.url, { keepAliveTimeout: 60_000, pipelining: 1 }),
  )
  const latencies: number[] = []
  let errors = 0
  let bytesSent = 0
  let firstError: string | undefined
  let cursor = 0
  const cpuBefore = cpuMsOf(target.pid!)
  const selfBefore = process.cpuUsage()
  const started = performance.now()
  const end = started + durationMs
  const record = (sample: Sample, body: Buffer) => {
    latencies.push(sample.totalMs)
    bytesSent += body.length
    if (sample.status !== 200) {
      errors++
      firstError ??= `${target.name} answered ${sample.status}: ${sample.text}`
    }
  }
  await Promise.all(
    clients.map(async (dispatcher, w) => {
      if (source.bodies) {
        const bodies = source.bodies
        let i = (w * 7919) % bodies.length
        while (performance.now() < end) {
          const body = bodies[i]!
          i = (i + 1) % bodies.length
          const session = `bench-tp-${Math.floor(i / steps)}`
          record(await send(dispatcher, headersFor(target, session), body), body)
        }
        return
      }
      let current: ReturnType<SessionPool['take']> | undefined
      while (performance.now() < end) {
        if (!current || current.session.steps >= steps) {
          current = source.pool!.take()
          if (current.cold) {
            const body = current.session.base()
            record(await send(dispatcher, headersFor(target, current.name), body), body)
            continue
          }
        }
        const body = current.session.next()
        record(await send(dispatcher, headersFor(target, current.name), body), body)
        cursor++
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const cpuAfter = cpuMsOf(target.pid!)
  const self = process.cpuUsage(selfBefore)
  await Promise.all(clients.map((client) => client.close()))
  const n = latencies.length
  return {
    requests: n,
    seconds: round(seconds, 2),
    rps: round(n / seconds, 1),
    mbPerSecond: round(bytesSent / seconds / 1e6, 2),
    latency: summarize(latencies),
    errors,
    firstError,
    serverCpuMsPerRequest:
      cpuBefore !== undefined && cpuAfter !== undefined
        ? round((cpuAfter - cpuBefore) / n, 3)
        : null,
    serverCpuPercent:
      cpuBefore !== undefined && cpuAfter !== undefined
        ? round(((cpuAfter - cpuBefore) / (seconds * 1000)) * 100, 1)
        : null,
    clientCpuPercent: round(((self.user + self.system) / 1000 / (seconds * 1000)) * 100, 1),
    steps: cursor,
  }
}

async function throughputPhase(
  env: Env,
  servers: Server[],
  rpsHint: Map<string, number>,
): Promise<
  Record<string, Record<string, Awaited<ReturnType<typeof loadRun>> & { coldSessions?: number }>>
> {
  const size = { ...SIZES['10kb']!, sessionSteps: 8 }
  const bodies = bodyCycle(env, size)
  const pools = new Map<string, SessionPool>()
  const results: Record<string, Record<string, any>> = {}
  const warmMs = Math.min(1000, env.opts.durationMs / 3)
  for (const [ci, c] of env.opts.concurrency.entries()) {
    results[c] = {}
    // Rotate the order of targets from one concurrency to the next.
    const order = servers.map((_, j) => servers[(ci + j) % servers.length]!)
    for (const server of order) {
      const t = server.target
      let source: { pool?: SessionPool; bodies?: Buffer[] } = { bodies }
      let pool: SessionPool | undefined
      // Enough primed sessions for `ms` at `rps`, with a margin, plus one per worker. The
      // warm-up runs partly on unprimed sessions, so the measured run goes faster than its rate
      // says (2-3x at c=32): the margin covers that.
      const topUp = async (rps: number, ms: number) => {
        const need = Math.ceil((rps * 3 * ms) / 1000 / size.sessionSteps) + c
        const want = Math.min(need, 20_000) - pool!.available
        env.label = `tp-${c}:prime`
        if (want > 0) await pool!.prime(want)
      }
      if (t.stateful) {
        pool = pools.get(t.name) ?? new SessionPool(env, t, size)
        pools.set(t.name, pool)
        await topUp(rpsHint.get(t.name) ?? 500, warmMs)
        source = { pool }
      }
      env.label = `tp-${c}:warm`
      const warm = await loadRun(server, c, warmMs, source, size.sessionSteps)
      // The warm-up's rate at this concurrency says how many sessions the measured run needs.
      if (pool) await topUp(Math.max(warm.rps, rpsHint.get(t.name) ?? 0), env.opts.durationMs)
      const coldBefore = source.pool?.cold ?? 0
      env.label = `tp-${c}`
      const peaks = beginPeaks([server])
      const waitsBefore = source.pool && (await lockWaits(t.url))
      const run = await loadRun(server, c, env.opts.durationMs, source, size.sessionSteps)
      const row: any = { ...run, peakRss: endPeaks([server], peaks)[t.name] }
      if (source.pool) {
        row.coldSessions = source.pool.cold - coldBefore
        row.lembas = lembasStats([server], `tp-${c}`)[t.name]
        const waitsAfter = await lockWaits(t.url)
        if (waitsBefore && waitsAfter)
          row.lockWaits = {
            count: waitsAfter.count - waitsBefore.count,
            seconds: round(waitsAfter.seconds - waitsBefore.seconds, 4),
          }
      }
      results[c][t.name] = row
      rpsHint.set(t.name, Math.max(rpsHint.get(t.name) ?? 0, run.rps))
      log(
        `throughput c=${c} ${t.name}: ${run.rps} req/s, p99 ${run.latency.p99.toFixed(1)} ms` +
          (run.errors ? `, ${run.errors} errors (${run.firstError})` : '') +
          (row.coldSessions ? `, ${row.coldSessions} unprimed sessions` : ''),
      )
    }
  }
  return results
}

// ---------------------------------------------------------------------------------------------
// RSS with many concurrent sessions, on fresh processes

async function rssPhase(env: Env) {
  const kb = env.opts.rssKb
  const size: SizeClass = {
    ...(kb >= 256 ? SIZES['1mb']! : SIZES['10kb']!),
    name: `${kb}kb`,
    bytes: kb * 1024,
    sessionSteps: env.opts.rssSteps,
  }
  const count = env.opts.rssSessions
  log(
    `rss: ${count} concurrent sessions of ~${kb} KB, ${size.sessionSteps} steps each, fresh processes`,
  )
  const results: Record<string, any> = {}
  for (const name of env.opts.proxies) {
    const server = await startProxy(env, name, '-rss')
    const pid = server.target.pid!
    // Settle, then measure idle RSS and reset the peak: start-up (and tsx's transpiling) is not load.
    await sleep(1000)
    const idle = memoryOf(pid)?.rss ?? NaN
    const peakReset = resetPeak(pid)
    const sessions = Array.from({ length: count }, (_, i) => ({
      session: sessionFor(size, seedOf(env.opts.seed, 'rss', i), false),
      name: `bench-rss-${i}`,
    }))
    const pool = new Pool(server.target.url, { connections: count })
    let maxRss = 0
    const sampler = setInterval(() => {
      const m = memoryOf(pid)
      if (m) maxRss = Math.max(maxRss, m.rss)
    }, 20)
    let errors = 0
    let requests = 0
    env.label = 'rss'
    const started = performance.now()
    await Promise.all(
      sessions.map(async ({ session, name: sessionName }) => {
        const headers = headersFor(server.target, sessionName)
        for (let k = 0; k <= size.sessionSteps; k++) {
          const body = k === 0 ? session.base() : session.next()
          const sample = await send(pool, headers, body)
          requests++
          if (sample.status !== 200) errors++
        }
      }),
    )
    const seconds = (performance.now() - started) / 1000
    clearInterval(sampler)
    const peak = memoryOf(pid)?.hwm ?? NaN
    await pool.close()
    await sleep(1000)
    const after = memoryOf(pid)?.rss ?? NaN
    const settled = await lowestRss(pid, env.opts.rssSettleMs - 1000)
    results[name] = {
      idleRss: idle,
      peakRss: peak,
      peakIncludesStartup: !peakReset,
      growth: peak - idle,
      sampledMaxRss: maxRss,
      rssAfter: after,
      rssSettled: settled,
      requests,
      errors,
      seconds: round(seconds, 1),
      lembas: LEMBAS(name) ? lembasStats([server], 'rss')[name] : undefined,
    }
    log(
      `rss ${name}: idle ${mb(idle)}, peak ${mb(peak)}, after ${mb(after)}, settled ${mb(settled)} (${requests} requests, ${errors} errors)`,
    )
    await server.child!.stop()
  }
  // The settled column starts after the 1 s figure; 0 (or 1) measures none.
  const settleS = env.opts.rssSettleMs / 1000
  return { sessions: count, historyKb: kb, steps: size.sessionSteps, settleS, results }
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** The lowest RSS of `pid` over the next `ms` (sampled every 250 ms); NaN for none. */
async function lowestRss(pid: number, ms: number): Promise<number> {
  let lowest = NaN
  for (const end = performance.now() + ms; performance.now() < end;) {
    await sleep(250)
    const rss = memoryOf(pid)?.rss
    if (rss !== undefined && !(rss >= lowest)) lowest = rss
  }
  return lowest
}

/** Idle RSS of an empty node process with and without tsx's loader: what tsx adds to every figure. */
async function tsxOverhead(): Promise<{ plain: number; tsx: number }> {
  const idle = async (args: string[]) => {
    const child = await spawnChild({
      name: 'idle-node',
      command: process.execPath,
      args: [...args, '-e', "setInterval(() => {}, 1000); console.log('ready')"],
      cwd: REPO,
      ready: /(ready)/,
    })
    await sleep(1000)
    const rss = memoryOf(child.pid)?.rss ?? NaN
    await child.stop()
    return rss
  }
  return { plain: await idle([]), tsx: await idle(tsx) }
}

/**
 * Notes how many log lines each lembas has sent; the function returned waits (at most 1 s) until
 * each has sent `count` more. A request's line may come after its client saw the last byte (a
 * stream's, once the stream has ended): waiting before the label changes keeps a session's
 * unmeasured first request out of the measured figures. No wait when lembas logs no requests.
 */
function logMark(env: Env, servers: Server[]): (count: number) => Promise<void> {
  const before = new Map(servers.map((s) => [s, s.events.length]))
  return async (count) => {
    if (!['debug', 'info', undefined].includes(env.opts.logLevel)) return
    const deadline = performance.now() + 1000
    const behind = () =>
      servers.some((s) => s.target.stateful && s.events.length < before.get(s)! + count)
    while (behind() && performance.now() < deadline) await sleep(1)
  }
}

/**
 * SQLite writes that found the file locked by another process (`--workers`, replicas on one
 * file) and waited, from lembas's /metrics: zero where none was counted (Redis, one process).
 */
async function lockWaits(url: string): Promise<{ count: number; seconds: number }> {
  const response = await request(url + '/metrics')
  const text = await response.body.text()
  const figure = (name: string) =>
    [...text.matchAll(new RegExp(`^${name}\\{operation="lock_wait",ok="[a-z]+"\\} (\\S+)$`, 'gm'))]
      .map((m) => Number(m[1]))
      .reduce((a, b) => a + b, 0)
  if (!text.includes('operation="lock_wait"')) return { count: 0, seconds: 0 }
  return {
    count: figure('lembas_store_duration_seconds_count'),
    seconds: figure('lembas_store_duration_seconds_sum'),
  }
}

function lembasStats(servers: Server[], label: string) {
  const out: Record<string, any> = {}
  for (const server of servers) {
    if (!server.target.stateful) continue
    const events = server.events.filter((e) => e.label === label)
    out[server.target.name] = {
      requests: events.length,
      newResultsPerRequest: round(
        events.reduce((a, e) => a + e.newResults, 0) / Math.max(events.length, 1),
        2,
      ),
      stubsPerRequest: round(
        events.reduce((a, e) => a + e.stubs, 0) / Math.max(events.length, 1),
        2,
      ),
      rebuildMs: summarize(events.map((e) => e.rebuildMs)),
    }
  }
  return out
}

function beginPeaks(servers: Server[]): Map<string, boolean> {
  return new Map(
    servers.map((s) => [s.target.name, s.target.pid ? resetPeak(s.target.pid) : false]),
  )
}

/** Peak RSS of each server since beginPeaks (or over its lifetime where it could not be reset). */
function endPeaks(servers: Server[], reset: Map<string, boolean>) {
  const out: Record<string, { bytes: number; sinceStart: boolean }> = {}
  for (const s of servers) {
    if (!s.target.pid) continue
    out[s.target.name] = {
      bytes: memoryOf(s.target.pid)?.hwm ?? NaN,
      sinceStart: !reset.get(s.target.name),
    }
  }
  return out
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const mb = (bytes: number) =>
  Number.isFinite(bytes) ? `${(bytes / 1048576).toFixed(1)} MB` : 'n/a'
const started = performance.now()
function log(message: string): void {
  process.stderr.write(
    `[${((performance.now() - started) / 1000).toFixed(1).padStart(6)}s] ${message}\n`,
  )
}

function machine() {
  const git = (args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: REPO, stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim()
    } catch {
      return undefined
    }
  }
  return {
    date: new Date().toISOString(),
    node: process.version,
    v8: process.versions.v8,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryBytes: totalmem(),
    loadavgAtStart: loadavg().map((l) => round(l, 2)),
    commit: git(['rev-parse', 'HEAD']),
    dirty: (git(['status', '--porcelain', '--untracked-files=no']) ?? '') !== '',
    lembasVersion: (
      JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }
    ).version,
    portkeyVersion: (() => {
      try {
        return (
          JSON.parse(
            readFileSync(join(REPO, 'node_modules/@portkey-ai/gateway/package.json'), 'utf8'),
          ) as { version: string }
        ).version
      } catch {
        return undefined
      }
    })(),
    redisVersion: (() => {
      try {
        return execFileSync('redis-server', ['--version']).toString().trim()
      } catch {
        return undefined
      }
    })(),
  }
}

// ---------------------------------------------------------------------------------------------
// Report

function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))]
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)))
  const line = (r: string[]) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')
  return [
    line(cells[0]!),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...cells.slice(1).map(line),
  ].join('\n')
}

const ms = (v: number | undefined) =>
  v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(2)
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b <= 0
    ? 'n/a'
    : (a / b).toFixed(2) + 'x'

interface Check {
  target: string
  measured: string
  pass: boolean | undefined
}

function report(results: any, opts: Options): { text: string; checks: Check[] } {
  const out: string[] = []
  const m = results.machine
  out.push(
    `lembas-proxy bench  ${m.date}  node ${m.node}  ${m.cpu} x${m.cores}  ` +
      `load ${m.loadavgAtStart.join(' ')} -> ${m.loadavgAtEnd.join(' ')}` +
      `  pinning: ${results.pinning}  commit ${String(m.commit).slice(0, 10)}${m.dirty ? ' (dirty tree)' : ''}`,
  )
  for (const kind of ['latency', 'stream'] as const) {
    for (const phase of results[kind] ?? []) {
      const rows = phase.rows as LatencyRow[]
      const floor = rows.find((r) => r.target === 'floor')
      const direct = rows.find((r) => r.target === 'direct')!
      const pick = (r: LatencyRow) => (kind === 'latency' ? r.total : r.ttfb)
      const add = (r: LatencyRow) => (kind === 'latency' ? r.added : r.addedTtfb)
      out.push(
        '',
        `${kind === 'latency' ? 'Added latency' : 'Streaming time to first byte'}, ${phase.size} ` +
          `(bodies ${(phase.bodyBytes.p50 / 1024).toFixed(0)} KB p50, ~${(phase.newBytesPerRequest.p50 / 1024).toFixed(1)} KB new per request; ` +
          `${phase.iterations} alternating iterations, ms)`,
        table(
          [
            'target',
            kind === 'latency' ? 'p50' : 'ttfb p50',
            'p99',
            'added p50',
            'added p99',
            'p50 / direct',
            'added / floor',
            'errors',
          ],
          rows.map((r) => [
            r.target,
            ms(pick(r).p50),
            ms(pick(r).p99),
            r.target === 'direct' ? '-' : ms(add(r).p50),
            r.target === 'direct' ? '-' : ms(add(r).p99),
            ratio(pick(r).p50, pick(direct).p50),
            r.target === 'direct' || r.target === 'floor' || !floor
              ? '-'
              : ratio(add(r).p50, add(floor).p50),
            r.errors,
          ]),
        ),
      )
      if (phase.store) {
        const s = phase.store
        out.push(
          `  lembas-redis store per request: ${s.readsPerRequest} HMGET (batched reads), ` +
            `${s.writeScriptsPerRequest} write scripts, ${s.callsPerRequest.hsetnx ?? 0} HSETNX fields, ` +
            `${(s.bytesToRedisPerRequest / 1024).toFixed(1)} KB written, ${(s.bytesFromRedisPerRequest / 1024).toFixed(1)} KB read`,
        )
      }
      for (const [name, l] of Object.entries(phase.lembas ?? {}) as [string, any][])
        out.push(
          `  ${name}: ${l.newResultsPerRequest} new results/request, rebuild_ms p50 ${ms(l.rebuildMs.p50)} p99 ${ms(l.rebuildMs.p99)}`,
        )
    }
  }
  out.push(...doorsTables([...(results.doors ?? []), ...(results['doors-stream'] ?? [])], table))
  if (results.throughput) {
    out.push(
      '',
      'Throughput, 10 KB session bodies (req/s; closed loop, ' +
        opts.durationMs / 1000 +
        ' s per point)',
    )
    const names = Object.keys(Object.values(results.throughput)[0] as object)
    const order = ['direct', ...PROXIES].filter((n) => names.includes(n))
    const rows: (string | number)[][] = []
    for (const [c, byTarget] of Object.entries(results.throughput) as [string, any][]) {
      for (const name of order) {
        const r = byTarget[name]
        if (!r) continue
        rows.push([
          `c=${c} ${name}`,
          r.rps,
          ms(r.latency.p50),
          ms(r.latency.p99),
          ratio(r.rps, byTarget.direct?.rps),
          name === 'direct' || name === 'floor' ? '-' : ratio(r.rps, byTarget.floor?.rps),
          r.serverCpuMsPerRequest ?? 'n/a',
          `${r.clientCpuPercent}%`,
          r.errors,
        ])
      }
    }
    const waits = Object.entries(results.throughput as Record<string, any>).flatMap(
      ([c, byTarget]) =>
        Object.entries(byTarget as Record<string, any>)
          .filter(([name, r]) => r.lockWaits && !ON_REDIS(name))
          .map(([name, r]) => {
            const { count, seconds } = r.lockWaits
            const each = count > 0 ? `, ${round((seconds * 1000) / count, 2)} ms each` : ''
            return `c=${c} ${name} ${round(count / r.requests, 3)} a request${each}`
          }),
    )
    out.push(
      table(
        [
          'concurrency target',
          'req/s',
          'p50 ms',
          'p99 ms',
          '/ direct',
          '/ floor',
          'cpu ms/req',
          'client cpu',
          'errors',
        ],
        rows,
      ),
    )
    if (waits.length > 0)
      out.push(`SQLite lock waits (a write finding another process's lock): ${waits.join('; ')}`)
    const workersRan = Object.values(results.throughput as Record<string, object>).some(
      (byTarget) => Object.keys(byTarget).some(WORKERS),
    )
    if (workersRan && results.pinning !== 'none')
      out.push(
        'The workers are not pinned, the load is: they take turns with it on its core (--no-pin to compare them with one process on an equal footing).',
      )
  }
  if (results.peakRss) {
    out.push('', 'Peak RSS of each server over the whole run (VmHWM)')
    out.push(
      table(
        ['server', 'peak RSS'],
        Object.entries(results.peakRss as Record<string, number>).map(([n, b]) => [n, mb(b)]),
      ),
    )
  }
  if (results.rss) {
    const r = results.rss
    out.push(
      '',
      `RSS with ${r.sessions} concurrent sessions of ~${r.historyKb} KB history (${r.steps} steps each; fresh processes)`,
    )
    out.push(
      table(
        [
          'server',
          'idle',
          'peak',
          'peak - idle',
          'after 1 s',
          r.settleS > 1 ? `after ${r.settleS} s` : 'settled: not measured',
          'requests',
          'errors',
          'seconds',
        ],
        Object.entries(r.results as Record<string, any>).map(([n, x]) => [
          n,
          mb(x.idleRss),
          mb(x.peakRss),
          mb(x.growth),
          mb(x.rssAfter),
          mb(x.rssSettled),
          x.requests,
          x.errors,
          x.seconds,
        ]),
      ),
    )
    if (r.idleNode)
      out.push(
        `  an idle node process: ${mb(r.idleNode.plain)}; with tsx's loader: ${mb(r.idleNode.tsx)}` +
          (r.lembasUnderTsx
            ? ' (lembas, the floor and the fake run under tsx; --lembas-dist runs lembas from dist/)'
            : ''),
      )
  }

  // The targets: each as a ratio to the floor measured in the same run.
  const checks: Check[] = []
  const lembasNames = opts.proxies.filter(LEMBAS)
  const FLOOR_RATIO = 1.5
  const versusFloor = (
    phase: any,
    name: string,
    what: string,
    pick: (r: LatencyRow) => number,
  ): Check => {
    const row = phase?.rows.find((r: LatencyRow) => r.target === name)
    const floor = phase?.rows.find((r: LatencyRow) => r.target === 'floor')
    const value = row && floor && pick(floor) > 0 ? pick(row) / pick(floor) : undefined
    return {
      target: `${name}: ${what}, ${phase.size} <= ${FLOOR_RATIO}x floor's`,
      measured:
        row && floor
          ? `${ms(pick(row))} ms vs floor ${ms(pick(floor))} ms = ${value === undefined ? 'n/a' : value.toFixed(2) + 'x'}`
          : 'not measured (needs floor)',
      pass: value === undefined ? undefined : value <= FLOOR_RATIO,
    }
  }
  for (const name of lembasNames) {
    for (const phase of results.latency ?? [])
      checks.push(versusFloor(phase, name, 'added p50', (r) => r.added.p50))
    for (const phase of results.stream ?? [])
      checks.push(
        versusFloor(phase, name, 'streaming first byte, added p50', (r) => r.addedTtfb.p50),
      )
  }
  const tp32 = results.throughput?.['32']
  const tp1 = results.throughput?.['1']
  for (const name of lembasNames) {
    const r = tp32?.[name]
    const floor = tp32?.floor
    checks.push({
      target: `${name}: throughput at c=32 >= 70% of floor's`,
      measured:
        r && floor
          ? `${r.rps} vs ${floor.rps} req/s = ${((r.rps / floor.rps) * 100).toFixed(0)}%`
          : 'not measured (needs c=32 and floor)',
      pass: r && floor ? r.rps >= 0.7 * floor.rps : undefined,
    })
    const one = tp1?.[name]
    const floorOne = tp1?.floor
    const cpu = one?.serverCpuMsPerRequest
    const floorCpu = floorOne?.serverCpuMsPerRequest
    checks.push({
      target: `${name}: proxy CPU per request, c=1, 10 KB <= ${FLOOR_RATIO}x floor's`,
      measured:
        typeof cpu === 'number' && typeof floorCpu === 'number'
          ? `${cpu} vs ${floorCpu} ms = ${(cpu / floorCpu).toFixed(2)}x`
          : 'not measured (needs c=1 and floor)',
      pass:
        typeof cpu === 'number' && typeof floorCpu === 'number'
          ? cpu <= FLOOR_RATIO * floorCpu
          : undefined,
    })
  }
  const stores = [...(results.latency ?? []), ...(results.stream ?? [])].filter((p: any) => p.store)
  if (stores.length > 0) {
    const reads = Math.max(...stores.map((p: any) => p.store.readsPerRequest))
    const written = stores.map((p: any) => ({
      size: `${p.kind} ${p.size}`,
      written: p.store.bytesToRedisPerRequest,
      allowed: 4 * p.newBytesPerRequest.mean + 8192,
    }))
    const worst = written.reduce((a, b) => (b.written / b.allowed > a.written / a.allowed ? b : a))
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`
    checks.push({
      target: 'lembas-redis: one batched store read per request',
      measured: `max ${reads} HMGET per request over ${stores.length} phases`,
      pass: reads <= 1,
    })
    checks.push({
      target: 'lembas-redis: writes only for new results (bytes written <= 4x new + 8 KB)',
      measured: `worst ${worst.size}: ${kb(worst.written)} written, limit ${kb(worst.allowed)}`,
      pass: worst.written <= worst.allowed,
    })
  } else {
    checks.push({
      target: 'lembas-redis: store reads and writes per request',
      measured: 'not measured (needs lembas-redis and the latency phase)',
      pass: undefined,
    })
  }
  if (results.rss) {
    for (const name of lembasNames) {
      const x = results.rss.results[name]
      if (!x) continue
      checks.push({
        target: `${name}: peak RSS <= 200 MB, ${results.rss.sessions} sessions (~${results.rss.historyKb} KB each) starting together`,
        measured: `peak ${mb(x.peakRss)}; after: ${mb(x.rssAfter)} at 1 s${results.rss.settleS > 1 ? `, ${mb(x.rssSettled)} at ${results.rss.settleS} s` : ''}`,
        pass: x.peakRss <= 200 * 1048576,
      })
    }
  }
  checks.push(...doorsChecks(results.doors, lembasNames, opts.doors))
  checks.push(...doorsFloorChecks(results.doors, lembasNames, FLOOR_RATIO))
  out.push('', 'Targets')
  out.push(
    table(
      ['target', 'measured', 'result'],
      checks.map((c) => [
        c.target,
        c.measured,
        c.pass === undefined ? 'n/a' : c.pass ? 'PASS' : 'MISS',
      ]),
    ),
  )
  return { text: out.join('\n'), checks }
}

// ---------------------------------------------------------------------------------------------
// Main

/** The run's scratch folder (SQLite files), removed at the end and on Ctrl-C. */
let scratch: string | undefined

async function main(): Promise<void> {
  const opts = options()
  const pin = opts.pin && cpus().length >= 2 && tasksetAvailable()
  const env: Env = {
    opts,
    tmp: (scratch = mkdtempSync(join(tmpdir(), 'lembas-bench-'))),
    fakeUrl: '',
    fake: undefined as unknown as Child,
    proxyCpus: pin ? '1' : undefined,
    otherCpus: pin ? '0' : undefined,
    label: '',
  }
  reapFolder(env.tmp)
  if (pin) pinSelf('0')
  const results: Record<string, any> = {
    machine: machine(),
    pinning: pin
      ? 'servers under test on CPU 1; client, fake upstream and redis-server on CPU 0'
      : 'none',
    options: { ...opts, phases: [...opts.phases] },
  }
  log(
    `node ${process.version}, ${results.machine.cpu} x${results.machine.cores}, pinning: ${pin ? 'yes' : 'no'}`,
  )
  try {
    env.fake = await startFake(env)
    env.fakeUrl = env.fake.url
    if (opts.proxies.some(ON_REDIS)) env.redis = await startRedis(env)
    const direct: Server = {
      target: { name: 'direct', url: env.fakeUrl, headers: {}, stateful: false, pid: env.fake.pid },
      events: [],
    }
    const servers: Server[] = [direct]
    for (const name of opts.proxies) servers.push(await startProxy(env, name))
    log(
      `servers: ${servers.map((s) => `${s.target.name} ${s.target.url} (pid ${s.target.pid})`).join(', ')}`,
    )

    const rpsHint = new Map<string, number>()
    if (opts.phases.has('latency')) {
      results.latency = []
      for (const name of opts.sizes) {
        const phase = await latencyPhase(env, servers, SIZES[name]!, false)
        results.latency.push(phase)
        if (name === '10kb')
          for (const row of phase.rows)
            rpsHint.set(row.target, 1000 / Math.max(row.total.p50, 0.05))
      }
    }
    if (opts.phases.has('stream')) {
      results.stream = []
      for (const name of opts.sizes)
        results.stream.push(await latencyPhase(env, servers, SIZES[name]!, true))
    }
    for (const kind of ['doors', 'doors-stream'] as const) {
      if (!opts.phases.has(kind) || opts.doors.length === 0) continue
      // Portkey is left out: the doors compare lembas's front doors with the floor.
      const tested = servers.filter((s) => s.target.name !== 'portkey')
      const phases: DoorsPhase[] = (results[kind] = [])
      for (const name of opts.doorSizes) {
        const ctx = {
          targets: tested.map((s) => s.target),
          doors: opts.doors,
          seed: opts.seed,
          iterations: opts.iterations,
          setLabel: (label: string) => (env.label = label),
          mark: () => logMark(env, tested),
          log,
        }
        const phase = await doorsPhase(ctx, SIZES[name]!, kind === 'doors-stream')
        phase.lembas = Object.fromEntries(
          tested
            .filter((s) => s.target.stateful)
            .map((s) => [s.target.name, doorLogs(s.events, `${kind}-${name}`)]),
        )
        phases.push(phase)
      }
    }
    if (opts.phases.has('throughput'))
      results.throughput = await throughputPhase(env, servers, rpsHint)
    results.peakRss = Object.fromEntries(
      servers.map((s) => [
        s.target.name === 'direct' ? 'fake-upstream' : s.target.name,
        memoryOf(s.target.pid!)?.hwm ?? NaN,
      ]),
    )
    const stats = await fetch(env.fakeUrl + '/stats').then((r) => r.json())
    results.fakeUpstream = stats
    if (opts.phases.has('rss') && opts.proxies.length > 0) {
      results.rss = await rssPhase(env)
      results.rss.idleNode = await tsxOverhead()
      results.rss.lembasUnderTsx = !opts.lembasDist
    }

    // Issue 7's load figure: 50 sessions x 40 requests over two processes on one Redis.
    let concurrencyText = ''
    if (opts.phases.has('concurrency')) {
      log('concurrency: 50 sessions x 40 requests over two proxy processes on one Redis')
      const figures = await runConcurrency({ log })
      results.concurrency = figures
      concurrencyText = '\n\nConcurrency (bench/concurrency.md)\n' + formatFigures(figures)
    }

    results.machine.loadavgAtEnd = loadavg().map((l) => round(l, 2))
    const { text, checks } = report(results, opts)
    results.targets = checks
    writeFileSync(opts.out, JSON.stringify(results, null, 2) + '\n')
    process.stdout.write('\n' + text + concurrencyText + '\n\nraw figures: ' + opts.out + '\n')
  } finally {
    env.redis?.client.disconnect()
    await stopAll()
    rmSync(env.tmp, { recursive: true, force: true })
  }
}

let stopping = false
const interrupt = (signal: NodeJS.Signals) => {
  if (stopping) return
  stopping = true
  log(`${signal}: stopping every server`)
  void stopAll().finally(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true })
    process.exit(130)
  })
}
process.on('SIGINT', interrupt)
process.on('SIGTERM', interrupt)
process.on('exit', killAllNow)

main().catch(async (error: unknown) => {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  await stopAll()
  process.exit(1)
})
