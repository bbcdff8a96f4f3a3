/**
 * The concurrency figure (issue 7, item 3): many sessions at once, spread over several
 * lembas-proxy processes on one Redis, with parallel tool results and duplicate retries, and a
 * check of everything the upstream received: no id given twice in a session, one rendering per
 * request however many times (and on whichever process) it was sent, and every request's
 * upstream history a byte-prefix extension of the one before it in its session.
 *
 *   node --import tsx bench/concurrency.ts [--sessions 50] [--requests 40] [--redis URL]
 *
 * `runConcurrency` is what `npm run bench` and test/e2e/concurrency.test.ts call; see
 * bench/concurrency.md.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createServer as createNetServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { Pool } from 'undici'

const REPO = fileURLToPath(new URL('..', import.meta.url))

export interface ConcurrencyOptions {
  /** Sessions running at once (default 50). */
  readonly sessions?: number
  /** Requests of each session, sent one after another (default 40). */
  readonly requests?: number
  /** lembas-proxy processes; a session's requests go to them in turn (default 2). */
  readonly processes?: number
  /** Share of requests sent twice at once, to two processes, as a retry would (default 0.1). */
  readonly retryShare?: number
  /** Seed of the workload's choices (default 7). */
  readonly seed?: number
  /** An existing Redis to use; by default a redis-server is started (no persistence) and stopped. */
  readonly redisUrl?: string
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void
}

export interface Figures {
  readonly sessions: number
  readonly requestsPerSession: number
  readonly processes: number
  /** HTTP requests sent, retries included. */
  readonly requests: number
  /** Requests that were sent twice at once. */
  readonly retries: number
  /** Tool results numbered, over all sessions. */
  readonly toolResults: number
  readonly seconds: number
  readonly requestsPerSecond: number
  /** Requests answered with anything but 200, or never seen by the upstream. */
  readonly failed: number
  /** Ids given to two different results of one session, or results without an id. */
  readonly idCollisions: number
  /** Requests whose attempts reached the upstream with different bytes. */
  readonly differingRenderings: number
  /** Requests whose upstream messages do not begin with the previous request's, byte for byte. */
  readonly prefixViolations: number
  /** The first few problems, described. */
  readonly problems: readonly string[]
}

/** Runs the scenario once and returns its figures; starts and stops everything it needs. */
export async function runConcurrency(options: ConcurrencyOptions = {}): Promise<Figures> {
  const sessions = options.sessions ?? 50
  const perSession = options.requests ?? 40
  const processes = options.processes ?? 2
  const retryShare = options.retryShare ?? 0.1
  const log = options.log ?? (() => {})
  const random = mulberry32(options.seed ?? 7)

  // The workload is fixed before anything runs: every session's turns and which requests retry.
  const plans = Array.from({ length: sessions }, (_, s) => planSession(s, perSession, random))
  const retried = plans.map(() => Array.from({ length: perSession }, () => random() < retryShare))

  const cleanup: (() => Promise<void>)[] = []
  try {
    const redisUrl = options.redisUrl ?? (await startRedisServer(cleanup))
    const upstream = await startRecordingUpstream(cleanup)
    const prefix = `bench-${process.pid}-${Date.now()}`
    const proxies = await Promise.all(
      Array.from({ length: processes }, (_, i) =>
        startProxyProcess(`proxy-${i}`, ['--upstream', upstream.url, '--store', redisUrl], cleanup),
      ),
    )
    const pools = proxies.map((proxy) => {
      const pool = new Pool(proxy.url, { connections: sessions, pipelining: 1 })
      cleanup.push(() => pool.close())
      return pool
    })
    log(`concurrency: ${sessions} sessions x ${perSession} requests on ${processes} processes`)

    let sent = 0
    let failed = 0
    const problems: string[] = []
    const problem = (text: string): void => void (problems.length < 10 && problems.push(text))
    const send = async (s: number, k: number, attempt: number, body: string) => {
      const target = (s + k + attempt) % processes
      sent++
      try {
        const response = await pools[target]!.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer bench-tenant-${s % 5}`,
            'x-session-id': `${prefix}-${s}`,
            'x-bench-seq': `${s}:${k}:${attempt}`,
          },
          body,
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        })
        const text = await response.body.text()
        if (response.statusCode !== 200) {
          failed++
          problem(`session ${s} request ${k}: ${response.statusCode} ${text.slice(0, 300)}`)
        }
      } catch (error) {
        failed++
        problem(`session ${s} request ${k}: ${(error as Error).message}`)
      }
    }

    const started = performance.now()
    await Promise.all(
      plans.map(async (plan, s) => {
        const messages: unknown[] = [
          { role: 'system', content: `You are agent ${s}.` },
          { role: 'user', content: `Task ${s}: look around.` },
        ]
        for (let k = 0; k < perSession; k++) {
          messages.push(...plan[k]!)
          const body = JSON.stringify({ model: 'bench', tools: TOOLS, messages })
          const attempts = retried[s]![k] ? 2 : 1
          await Promise.all(Array.from({ length: attempts }, (_, a) => send(s, k, a, body)))
        }
      }),
    )
    const seconds = (performance.now() - started) / 1000

    // What the upstream saw, checked per session.
    let idCollisions = 0
    let differingRenderings = 0
    let prefixViolations = 0
    let toolResults = 0
    for (let s = 0; s < sessions; s++) {
      let previous: string | undefined
      for (let k = 0; k < perSession; k++) {
        const bodies = upstream.bodies.get(`${s}:${k}`) ?? []
        const expected = retried[s]![k] ? 2 : 1
        if (bodies.length !== expected) {
          problem(`session ${s} request ${k}: the upstream got ${bodies.length} of ${expected}`)
          if (bodies.length === 0) {
            failed++
            continue
          }
        }
        if (new Set(bodies).size > 1) {
          differingRenderings++
          problem(`session ${s} request ${k}: its attempts were rendered differently`)
        }
        const body = bodies[0]!
        if (previous !== undefined) {
          const before = JSON.stringify(JSON.parse(previous).messages).slice(0, -1)
          if (!body.includes(before)) {
            prefixViolations++
            problem(`session ${s} request ${k}: the history before it changed`)
          }
        }
        previous = body
      }
      if (previous === undefined) continue
      const tools = (JSON.parse(previous).messages as { role: string; content: string }[]).filter(
        (m) => m.role === 'tool',
      )
      const seen = new Set<string>()
      for (const [i, tool] of tools.entries()) {
        const id = /^\[#([0-9a-f]+)[\] ]/.exec(tool.content)?.[1]
        if (id === undefined || seen.has(id)) {
          idCollisions++
          problem(`session ${s} result ${i}: ${id ? `#${id} given twice` : 'no id'}`)
        } else if (parseInt(id, 16) !== i + 1) {
          // Not a collision, but ids run in message order from #0001 with none skipped.
          problem(`session ${s} result ${i}: #${id}, expected #${(i + 1).toString(16)}`)
        }
        if (id !== undefined) seen.add(id)
      }
      toolResults += tools.length
    }

    const figures: Figures = {
      sessions,
      requestsPerSession: perSession,
      processes,
      requests: sent,
      retries: retried.flat().filter(Boolean).length,
      toolResults,
      seconds: Math.round(seconds * 100) / 100,
      requestsPerSecond: Math.round(sent / seconds),
      failed,
      idCollisions,
      differingRenderings,
      prefixViolations,
      problems,
    }
    log(formatFigures(figures))
    return figures
  } finally {
    for (const step of cleanup.reverse()) await step().catch(() => {})
  }
}

/** One line, as `npm run bench` prints it. */
export function formatFigures(f: Figures): string {
  return (
    `concurrency: ${f.sessions} sessions x ${f.requestsPerSession} requests over ${f.processes} processes on one Redis ` +
    `(${f.requests} requests with ${f.retries} duplicate retries, ${f.toolResults} tool results): ` +
    `${f.requestsPerSecond} requests/s, ${f.failed} failed, ${f.idCollisions} id collisions, ` +
    `${f.differingRenderings} differing renderings, ${f.prefixViolations} prefix violations`
  )
}

// ── The workload ────────────────────────────────────────────────────────────────────────────

const TOOLS = [
  ['Bash', { command: { type: 'string' } }],
  ['Read', { file_path: { type: 'string' } }],
  ['Glob', { pattern: { type: 'string' } }],
].map(([name, properties]) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties } },
}))

const FILES = Array.from({ length: 4 }, (_, f) =>
  Array.from({ length: 12 }, (_, i) => `export const v${i} = ${f * 100 + i}`),
)

/**
 * The messages each request of session `s` appends: one assistant turn with 2 or 3 parallel
 * calls and their results. Bash outputs are new each time; reads repeat (stubs), and so do
 * listings (dedupe), so the renderings depend on what the request carries before them.
 */
function planSession(s: number, requests: number, random: () => number): unknown[][] {
  return Array.from({ length: requests }, (_, t) => {
    const count = random() < 0.5 ? 2 : 3
    const calls = Array.from({ length: count }, (_, j) => {
      const id = `call_${s}_${t}_${j}`
      if (j === 0) {
        const command = `echo ${s} ${t}`
        return { id, name: 'Bash', args: { command }, output: `session ${s} step ${t}\nok\n` }
      }
      if (j === 1) {
        const f = Math.floor(random() * FILES.length)
        const lines = FILES[f]!
        const output = lines.map((line, i) => `${String(i + 1).padStart(6)}→${line}`).join('\n')
        return { id, name: 'Read', args: { file_path: `/p/src/f${f}.ts` }, output }
      }
      return {
        id,
        name: 'Glob',
        args: { pattern: '**/*.ts' },
        output: '/p/src/f0.ts\n/p/src/f1.ts',
      }
    })
    return [
      {
        role: 'assistant',
        content: null,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: JSON.stringify(call.args) },
        })),
      },
      ...calls.map((call) => ({ role: 'tool', tool_call_id: call.id, content: call.output })),
    ]
  })
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// ── The servers ─────────────────────────────────────────────────────────────────────────────

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-concurrency',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
})

/** An upstream that keeps every chat body it receives under its x-bench-seq `s:k`. */
async function startRecordingUpstream(
  cleanup: (() => Promise<void>)[],
): Promise<{ url: string; bodies: Map<string, string[]> }> {
  const bodies = new Map<string, string[]>()
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const seq = String(request.headers['x-bench-seq'] ?? '')
      const key = seq.split(':').slice(0, 2).join(':')
      const list = bodies.get(key) ?? []
      list.push(Buffer.concat(chunks).toString('utf8'))
      bodies.set(key, list)
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(COMPLETION)
    })
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  cleanup.push(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/v1`, bodies }
}

/** A redis-server without persistence on a free port, stopped by `cleanup`. */
async function startRedisServer(cleanup: (() => Promise<void>)[]): Promise<string> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'lembas-bench-redis-'))
  const child = spawnTracked('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ])
  cleanup.push(async () => {
    await stopChild(child)
    rmSync(dir, { recursive: true, force: true })
  })
  const url = `redis://127.0.0.1:${port}`
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  })
  client.on('error', () => {}) // refused until the server listens: retried below
  try {
    const deadline = Date.now() + 10_000
    for (;;) {
      if (child.exitCode !== null) throw new Error('redis-server exited at start')
      try {
        await client.connect()
        await client.ping()
        return url
      } catch (error) {
        client.disconnect()
        if (Date.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  } finally {
    client.disconnect()
  }
}

/** `lembas-proxy --port 0 …` as a child process; resolves with its URL once it listens. */
async function startProxyProcess(
  name: string,
  args: string[],
  cleanup: (() => Promise<void>)[],
): Promise<{ url: string }> {
  const child = spawnTracked(
    process.execPath,
    ['--import', 'tsx', join(REPO, 'src/cli.ts'), '--port', '0', ...args],
    { LEMBAS_LOG_LEVEL: 'warn' },
  )
  cleanup.push(() => stopChild(child))
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk) => {
    if (stderr.length < 20_000) stderr += chunk
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${stderr}`)), 30_000)
    child.stdout!.on('data', (chunk) => {
      stdout += chunk
      const match = /^lembas-proxy listening on (http:\/\/\S+) -> /m.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve({ url: match[1]! })
      }
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited ${code ?? signal}: ${stderr}`))
    })
  })
}

/** A child that is SIGKILLed if this process exits without stopping it. */
function spawnTracked(command: string, args: string[], env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(command, args, {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.resume()
  const reap = (): void => void child.kill('SIGKILL')
  process.once('exit', reap)
  child.once('exit', () => process.off('exit', reap))
  child.once('error', () => {})
  return child
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
  await exited
  clearTimeout(timer)
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}

// ── Run directly ────────────────────────────────────────────────────────────────────────────

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      sessions: { type: 'string' },
      requests: { type: 'string' },
      processes: { type: 'string' },
      redis: { type: 'string' },
      json: { type: 'boolean' },
    },
  })
  const figures = await runConcurrency({
    sessions: values.sessions ? Number(values.sessions) : undefined,
    requests: values.requests ? Number(values.requests) : undefined,
    processes: values.processes ? Number(values.processes) : undefined,
    redisUrl: values.redis,
  })
  process.stdout.write(
    (values.json ? JSON.stringify(figures, null, 2) : formatFigures(figures)) + '\n',
  )
  for (const line of figures.problems) process.stdout.write(`  ${line}\n`)
  const clean =
    figures.failed + figures.idCollisions + figures.differingRenderings + figures.prefixViolations
  process.exit(clean === 0 ? 0 : 1)
}
