import { getHeapStatistics } from 'node:v8'
import type { Logger } from '../log.js'
import { majorCollection, mb, type Collect } from './idle-collect.js'

/** Bodies from this size on (256 KB) are collected after (`--cold-collect-kb`, default). */
export const COLD_COLLECT_BYTES = 256 * 1024

/**
 * Past this much heap in use, no collection is forced. One holds every request while it marks
 * what is live (on this project's machine 25–70 ms at the 50–100 MB of a proxy with its default
 * caches under load); on a larger heap V8's own collections, which mark alongside the requests,
 * hold them far less.
 */
export const COLD_COLLECT_MAX_HEAP_BYTES = 128 * 1024 * 1024

/**
 * A full collection after each large request parsed whole (a new session, a restart, another
 * replica). Such a request leaves garbage many times its body (a 1 MB history: about 27 MB), and
 * it lives long enough to reach V8's old space, which V8 lets grow to several times what is live
 * before it collects it: 64 sessions of 1 MB arriving together took the process to 370 MB.
 * Collected as each one ends, the next one starts on a heap that holds only what is live.
 */
export class ColdCollector {
  constructor(
    readonly minBytes: number,
    private readonly collect: Collect | undefined,
    private readonly log?: Logger,
    readonly maxHeapBytes = COLD_COLLECT_MAX_HEAP_BYTES,
    private readonly heapInUse = () => getHeapStatistics().used_heap_size,
  ) {}

  /** A request parsed whole, of a body this large, has been answered. */
  ended(bytes: number): void {
    if (!this.collect || this.minBytes <= 0 || bytes < this.minBytes) return
    const heap = this.heapInUse()
    if (heap > this.maxHeapBytes) {
      this.log?.debug('cold-collect-skipped', {
        heapMb: mb(heap),
        bodyKb: Math.round(bytes / 1024),
      })
      return
    }
    const started = performance.now()
    this.collect()
    this.log?.debug('cold-collected', {
      ms: Math.round(performance.now() - started),
      heapMb: mb(heap),
      bodyKb: Math.round(bytes / 1024),
    })
  }
}

/** The collector the flags ask for (`collect`: V8's own unless a test gives one); none with 0. */
export function coldCollector(
  minBytes: number,
  log?: Logger,
  collect?: Collect,
): ColdCollector | undefined {
  return minBytes > 0 ? new ColdCollector(minBytes, collect ?? majorCollection(), log) : undefined
}
