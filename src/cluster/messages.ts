import type { CacheSize } from '../memo.js'
import type { ColdBodies, FinishedRequest } from '../stats/index.js'

/**
 * What a worker and the primary say to each other (`--workers`): over the cluster's IPC, as
 * JSON. Only figures and counts travel; never a request's content or a credential.
 */
export type WorkerMessage =
  | { readonly lembas: 'listening'; readonly host: string; readonly port: number }
  /** Requests finished since the last batch (one message each cost a request ~0.1 ms of CPU). */
  | { readonly lembas: 'requests'; readonly requests: readonly FinishedRequest[] }
  /** Sent after what the worker held when `flush` came (requests, store timings). */
  | { readonly lembas: 'flushed'; readonly id: number }
  | { readonly lembas: 'store'; readonly calls: readonly (readonly [string, number, boolean])[] }
  | {
      readonly lembas: 'gauges'
      readonly caches: Record<string, CacheSize>
      readonly coldBodies: ColdBodies
      /** The longest the worker's event loop was held since its previous report, in seconds. */
      readonly loopBlock: number
    }
  | { readonly lembas: 'ask'; readonly id: number; readonly what: 'read' | 'metrics' }

export type PrimaryMessage =
  | {
      readonly lembas: 'answer'
      readonly id: number
      readonly value?: unknown
      readonly error?: string
    }
  /** Before answering /stats or /metrics: send what you hold, then `flushed` with this id. */
  | { readonly lembas: 'flush'; readonly id: number }
  /** A second Ctrl-C while stopping: end the requests under way now. */
  | { readonly lembas: 'stop-now' }

export function isWorkerMessage(value: unknown): value is WorkerMessage {
  return typeof value === 'object' && value !== null && 'lembas' in value
}

export function isPrimaryMessage(value: unknown): value is PrimaryMessage {
  if (typeof value !== 'object' || value === null || !('lembas' in value)) return false
  const kind = (value as { lembas: unknown }).lembas
  return kind === 'answer' || kind === 'flush' || kind === 'stop-now'
}
