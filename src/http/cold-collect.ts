import type { Logger } from '../log.js'
import { majorCollection, type Collect } from './idle-collect.js'

/** Bodies from this size on (256 KB) are collected after (`--cold-collect-kb`, default). */
export const COLD_COLLECT_BYTES = 256 * 1024

/**
 * A full collection after each large request parsed whole (a new session, a restart, another
 * replica). Such a request leaves garbage many times its body (a 1 MB history: about 27 MB), and
 * it lives long enough to reach V8's old space, which V8 lets grow to several times what is live
 * before it collects it: 64 sessions of 1 MB arriving together took the process to 370 MB.
 * Collected as each one ends (tens of milliseconds), the next one starts on a heap that holds
 * only what is live.
 */
export class ColdCollector {
  constructor(
    readonly minBytes: number,
    private readonly collect: Collect | undefined,
    private readonly log?: Logger,
  ) {}

  /** A request parsed whole, of a body this large, has been answered. */
  ended(bytes: number): void {
    if (!this.collect || this.minBytes <= 0 || bytes < this.minBytes) return
    const started = performance.now()
    this.collect()
    this.log?.debug('cold-collected', {
      ms: Math.round(performance.now() - started),
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
