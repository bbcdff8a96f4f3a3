import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { Logger } from '../log.js'

/** Request bodies since the last collection that make an idle pause worth one. */
export const BURST_BYTES = 32 * 1024 * 1024

/** A body that does not say its length (chunked) counts as this many bytes, as admission counts it. */
const UNKNOWN_BYTES = 1 << 20

/** Runs a full collection. */
export type Collect = () => void

/**
 * V8's full collection that gives free memory back to the system ("last resort": its pooled
 * pages too, which a regular one keeps). Undefined where this Node hands out no `gc`.
 */
export function fullCollection(): Collect | undefined {
  const gc = exposedGc()
  if (!gc) return undefined
  return OPTIONS_ARE_READ ? () => gc({ type: 'major', flavor: 'last-resort' }) : () => gc()
}

/** One regular collection of the whole heap: cheaper, and V8 keeps its pages for reuse. */
export function majorCollection(): Collect | undefined {
  const gc = exposedGc()
  // Without arguments, `gc` collects the whole heap at once on every Node.
  return gc && (() => gc())
}

/**
 * Whether `gc` reads its options: Node 20's V8 (11.3) takes any options object for a young
 * generation collection only, which frees nothing of the old space (measured: `{type: 'major'}`
 * left a heap of 24 MB garbage as it was, `gc()` took it to 3 MB).
 */
const OPTIONS_ARE_READ = Number(process.versions.v8.split('.')[0]) >= 12

type Gc = (options?: object) => void

/**
 * Node hands `gc` out only behind --expose-gc; a flag set now applies to contexts made after
 * it, so a fresh context hands it over.
 */
function exposedGc(): Gc | undefined {
  try {
    setFlagsFromString('--expose-gc')
    return runInNewContext('gc') as Gc
  } catch {
    return undefined
  }
}

export interface IdleCollectOptions {
  /** No request with a body in flight for this long: the burst is over. */
  readonly idleMs: number
  readonly burstBytes?: number
  readonly collect?: Collect | undefined
}

/**
 * Gives a burst's memory back once it is over. Every request brings its body and leaves garbage
 * several times its size; on Node 24 and 26 V8 does not collect it while the process is idle
 * (its memory reducer keeps seeing the burst's allocation rate), so a proxy that served 64
 * sessions at once kept their peak, 500 MB, for as long as nothing came. Once BURST_BYTES of
 * bodies came in since the last collection and no request with a body has been in flight for
 * `idleMs`, one full collection runs (tens of milliseconds, while nothing waits on it). Requests
 * without a body (the dashboard's polls) neither count nor hold it off.
 */
export function collectWhenIdle(server: Server, options: IdleCollectOptions, log: Logger): void {
  const collect = 'collect' in options ? options.collect : fullCollection()
  if (!collect) {
    log.warn('idle-collect-unavailable', {
      hint: 'this Node does not hand out gc; memory after a burst is V8’s to give back',
    })
    return
  }
  const burstBytes = options.burstBytes ?? BURST_BYTES
  let inFlight = 0
  let bytes = 0
  let timer: NodeJS.Timeout | undefined
  const run = () => {
    timer = undefined
    const before = process.memoryUsage()
    const started = performance.now()
    collect()
    const after = process.memoryUsage()
    bytes = 0
    log.info('memory-collected', {
      ms: Math.round(performance.now() - started),
      rssBeforeMb: mb(before.rss),
      rssAfterMb: mb(after.rss),
      heapBeforeMb: mb(before.heapTotal),
      heapAfterMb: mb(after.heapTotal),
    })
  }
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const size = bodyBytes(request)
    if (size === 0) return
    bytes += size
    inFlight++
    clearTimeout(timer)
    timer = undefined
    response.once('close', () => {
      inFlight--
      if (inFlight > 0 || bytes < burstBytes) return
      timer = setTimeout(run, options.idleMs)
      timer.unref()
    })
  })
  server.once('close', () => clearTimeout(timer))
}

/** The body's declared length; a chunked one counts as UNKNOWN_BYTES, none as 0. */
function bodyBytes(request: IncomingMessage): number {
  const declared = Number(request.headers['content-length'])
  if (Number.isFinite(declared) && declared >= 0) return declared
  return request.headers['transfer-encoding'] ? UNKNOWN_BYTES : 0
}

/** Bytes as whole megabytes, for log lines. */
export function mb(bytes: number): number {
  return Math.round(bytes / 1048576)
}
