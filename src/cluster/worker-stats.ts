import { monitorEventLoopDelay } from 'node:perf_hooks'
import {
  NO_COLD_BODIES,
  type ColdBodies,
  type FinishedRequest,
  type StatsSink,
  type StatsSnapshot,
} from '../stats/index.js'
import { isPrimaryMessage, type WorkerMessage } from './messages.js'
import type { CacheSize } from '../memo.js'

/** How often a worker sends its store timings and gauges to the primary. */
const REPORT_MS = 1000

/** How long a worker waits for the primary to answer /stats or /metrics. */
const ASK_TIMEOUT_MS = 5000

/**
 * Finished requests go to the primary in batches: at most this long after the first of a batch
 * finished, or once this many wait. /stats and /metrics never miss one: the primary asks every
 * worker for what it holds before it answers.
 */
const BATCH_MS = 100
const BATCH_REQUESTS = 256

/**
 * A worker's stats (`--workers`): finished requests go to the primary in batches, which keeps
 * the figures of every worker in one collector; /stats and /metrics are asked of it, so any worker
 * answers them the same.
 */
export function workerStats(send: (message: WorkerMessage) => void): StatsSink & {
  close(): void
} {
  const caches = new Map<string, () => CacheSize>()
  let coldBodies: () => ColdBodies = () => NO_COLD_BODIES
  let storeCalls: [string, number, boolean][] = []
  const waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  let nextId = 1
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  let finished: FinishedRequest[] = []
  let batchTimer: NodeJS.Timeout | undefined
  const sendFinished = () => {
    clearTimeout(batchTimer)
    batchTimer = undefined
    if (finished.length === 0) return
    send({ lembas: 'requests', requests: finished })
    finished = []
  }

  /** What the worker holds for the primary: its finished requests and its store timings. */
  const sendHeld = () => {
    sendFinished()
    if (storeCalls.length > 0) send({ lembas: 'store', calls: storeCalls })
    storeCalls = []
  }

  const onMessage = (message: unknown) => {
    if (!isPrimaryMessage(message)) return
    if (message.lembas === 'flush') {
      sendHeld()
      send({ lembas: 'flushed', id: message.id })
      return
    }
    if (message.lembas !== 'answer') return
    const pending = waiting.get(message.id)
    if (!pending) return
    waiting.delete(message.id)
    if (message.error !== undefined) pending.reject(new Error(message.error))
    else pending.resolve(message.value)
  }
  process.on('message', onMessage)

  const report = () => {
    sendHeld()
    const sizes = Object.fromEntries([...caches].map(([name, size]) => [name, size()]))
    send({ lembas: 'gauges', caches: sizes, coldBodies: coldBodies(), loopBlock: delay.max / 1e9 })
    delay.reset()
  }
  const timer = setInterval(report, REPORT_MS)
  timer.unref()

  const ask = (what: 'read' | 'metrics') =>
    new Promise<unknown>((resolve, reject) => {
      const id = nextId++
      const timeout = setTimeout(() => {
        waiting.delete(id)
        reject(new Error(`the primary process did not answer ${what} in time`))
      }, ASK_TIMEOUT_MS)
      waiting.set(id, {
        resolve: (value) => {
          clearTimeout(timeout)
          resolve(value)
        },
        reject: (error) => {
          clearTimeout(timeout)
          reject(error)
        },
      })
      send({ lembas: 'ask', id, what })
    })

  return {
    recordRequest(request) {
      finished.push(request)
      if (finished.length >= BATCH_REQUESTS) sendFinished()
      else if (!batchTimer) {
        batchTimer = setTimeout(sendFinished, BATCH_MS)
        batchTimer.unref()
      }
    },
    recordStore(operation, ms, ok) {
      storeCalls.push([operation, ms, ok])
    },
    async read() {
      return (await ask('read')) as StatsSnapshot
    },
    async metrics() {
      return String(await ask('metrics'))
    },
    watchCache(name, size) {
      caches.set(name, size)
    },
    watchColdBodies(use) {
      coldBodies = use
    },
    close() {
      clearInterval(timer)
      report()
      process.off('message', onMessage)
    },
  }
}
