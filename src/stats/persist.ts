import type { Logger } from '../log.js'
import type { Store } from '../store/store.js'
import type { SavedStats, StatsCollector } from './index.js'

/** The store scope that holds saved figures; a name no session scope takes (those are hashes). */
const SCOPE = 'lembas-stats'

/** How often changed figures are written: off the request path, at most this often. */
const EVERY_MS = 10_000

export interface StatsKeeper {
  /** Writes what changed since the last write (on stop). */
  flush(): Promise<void>
}

/**
 * `--stats store`: the figures of /stats go on over a restart. They are read once at start, then
 * written every 10 s when requests came in, and on stop; a failed write is logged and tried again
 * later, never in a request's way. `name` tells the processes apart (the machine, host and port):
 * each keeps its own figures, so two replicas do not overwrite each other's. Figures kept by a
 * version that named them by host and port alone (`formerName`) are read when there are no others.
 */
export async function keepStats(
  stats: StatsCollector,
  store: Store,
  name: string,
  formerName: string | undefined,
  log: Logger,
): Promise<StatsKeeper> {
  const key = 'figures:' + name
  try {
    const text =
      (await store.getLatest(SCOPE, key)) ??
      (formerName === undefined ? undefined : await store.getLatest(SCOPE, 'figures:' + formerName))
    if (text) stats.restore(JSON.parse(text) as SavedStats)
  } catch (error) {
    log.warn('stats-not-restored', { message: (error as Error).message })
  }
  let written = stats.saved().totals.requests
  const flush = async () => {
    const saved = stats.saved()
    if (saved.totals.requests === written) return
    try {
      await store.setLatest(SCOPE, key, JSON.stringify(saved))
      written = saved.totals.requests
    } catch (error) {
      log.warn('stats-not-saved', { message: (error as Error).message })
    }
  }
  setInterval(() => void flush(), EVERY_MS).unref()
  return { flush }
}
