import cluster, { type Worker } from 'node:cluster'
import type { Logger } from '../log.js'
import type { StatsCollector } from '../stats/index.js'
import { isWorkerMessage, type PrimaryMessage, type WorkerMessage } from './messages.js'

type GaugesMessage = Extract<WorkerMessage, { lembas: 'gauges' }>

/** A worker that dies is started again after this pause (not in a tight loop). */
const RESTART_MS = 1000

/** Past a worker's own grace (`--stop-grace-s`), how long it has to end its requests and exit. */
const STOP_MS = 5_000

/** /stats waits at most this long for a busy or stuck worker's last batch of requests. */
const FLUSH_MS = 1000

export interface PrimaryOptions {
  readonly workers: number
  /** Every worker's figures, in one collector (and kept over a restart by the caller). */
  readonly stats: StatsCollector
  readonly log: Logger
  /** The start-up lines, once the first worker listens. */
  readonly banner: (host: string, port: number) => string
  /** Called once every worker has stopped. */
  readonly closed: () => Promise<void>
  /** Each worker's grace for the requests under way on a stop (`--stop-grace-s`). */
  readonly graceMs: number
}

/**
 * `--workers N`: N processes serve the same port (node:cluster hands connections round-robin)
 * on one shared store; this process serves nothing. It starts them, starts again one that dies,
 * keeps the stats of all of them, answers their /stats and /metrics, and stops them on a signal.
 */
export function runPrimary(options: PrimaryOptions): void {
  const { stats, log } = options
  /** Each worker's latest report. */
  const gauges = new Map<number, GaugesMessage>()
  const watched = new Set<string>()
  let announced = false
  let stopping = false
  stats.watchLoop(() => Math.max(0, ...[...gauges.values()].map((g) => g.loopBlock)))
  /** A figure summed over the workers' latest reports. */
  const sum = (figure: (g: GaugesMessage) => number) =>
    [...gauges.values()].reduce((total, g) => total + figure(g), 0)
  stats.watchColdBodies(() => ({
    bytes: sum((g) => g.coldBodies.bytes),
    waiting: sum((g) => g.coldBodies.waiting),
  }))

  const answer = (worker: Worker, message: PrimaryMessage) => {
    if (worker.isConnected()) worker.send(message)
  }
  const workersNow = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w)
  /** Each flush under way: the workers it still waits for, and how it ends. */
  const flushes = new Map<number, { left: Set<number>; end: () => void }>()
  let nextFlush = 1
  /** Every worker's finished requests in, before figures are read (each worker batches them). */
  const flushAll = () =>
    new Promise<void>((resolve) => {
      const id = nextFlush++
      const workers = workersNow().filter((w) => w.isConnected())
      const left = new Set(workers.map((w) => w.id))
      const timer = setTimeout(() => end(), FLUSH_MS)
      const end = () => {
        clearTimeout(timer)
        flushes.delete(id)
        resolve()
      }
      flushes.set(id, { left, end })
      for (const worker of workers) answer(worker, { lembas: 'flush', id })
      if (left.size === 0) end()
    })
  const flushedBy = (workerId: number, id?: number) => {
    for (const [flushId, flush] of flushes) {
      if (id !== undefined && flushId !== id) continue
      flush.left.delete(workerId)
      if (flush.left.size === 0) flush.end()
    }
  }
  const onMessage = async (worker: Worker, message: WorkerMessage) => {
    switch (message.lembas) {
      case 'listening':
        listened.add(slots.get(worker.id)!)
        if (!announced) process.stdout.write(options.banner(message.host, message.port))
        announced = true
        return
      case 'requests':
        for (const request of message.requests) stats.recordRequest(request)
        return
      case 'flushed':
        return flushedBy(worker.id, message.id)
      case 'store':
        for (const [operation, ms, ok] of message.calls) stats.recordStore(operation, ms, ok)
        return
      case 'gauges':
        gauges.set(worker.id, message)
        for (const name of Object.keys(message.caches)) {
          if (watched.has(name)) continue
          watched.add(name)
          stats.watchCache(name, () => {
            const of = (g: GaugesMessage) => g.caches[name]
            const weighed = [...gauges.values()].some((g) => of(g)?.bytes !== undefined)
            return {
              entries: sum((g) => of(g)?.entries ?? 0),
              bytes: weighed ? sum((g) => of(g)?.bytes ?? 0) : undefined,
            }
          })
        }
        return
      case 'ask':
        try {
          await flushAll()
          const value = message.what === 'read' ? await stats.read() : await stats.metrics()
          answer(worker, { lembas: 'answer', id: message.id, value })
        } catch (error) {
          answer(worker, { lembas: 'answer', id: message.id, error: (error as Error).message })
        }
    }
  }

  /** Each worker's place (1…N), which a worker started again takes on: what it hands on is there. */
  const slots = new Map<number, number>()
  /**
   * Places whose worker listened once. One that exits before it ever did could not start (the
   * port in use, a store it cannot open): starting it again would loop, so the primary stops.
   */
  const listened = new Set<number>()
  const cannotStart = (worker: Worker, code: number | null, signal: string | null) => {
    log.error('worker-cannot-start', { pid: worker.process.pid, code, signal })
    void stop('SIGTERM', typeof code === 'number' && code > 0 ? code : 1)
  }
  const start = (slot: number) => {
    const worker = cluster.fork({ LEMBAS_WORKER_SLOT: String(slot) })
    slots.set(worker.id, slot)
    worker.on('message', (message: unknown) => {
      if (isWorkerMessage(message)) void onMessage(worker, message)
    })
  }
  cluster.on('exit', (worker, code, signal) => {
    gauges.delete(worker.id)
    flushedBy(worker.id)
    const slot = slots.get(worker.id)!
    slots.delete(worker.id)
    if (stopping) return
    if (!listened.has(slot)) return cannotStart(worker, code, signal)
    log.warn('worker-exited', { pid: worker.process.pid, code, signal, restartInMs: RESTART_MS })
    setTimeout(() => {
      if (!stopping) start(slot)
    }, RESTART_MS)
  })
  for (let slot = 1; slot <= options.workers; slot++) start(slot)

  const stop = async (signal: NodeJS.Signals, exitCode = 0) => {
    if (stopping) {
      // A second Ctrl-C: the workers end what they serve now.
      for (const worker of workersNow()) answer(worker, { lembas: 'stop-now' })
      return
    }
    stopping = true
    const workers = workersNow()
    log.info('stopping', { signal, workers: workers.length })
    const exited = workers.map(
      (worker) => new Promise<void>((resolve) => worker.once('exit', () => resolve())),
    )
    for (const worker of workers) worker.process.kill(signal)
    const late = setTimeout(() => {
      for (const worker of workers) worker.process.kill('SIGKILL')
    }, options.graceMs + STOP_MS)
    await Promise.all(exited)
    clearTimeout(late)
    await options.closed()
    process.exit(exitCode)
  }
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void stop(signal))
}
