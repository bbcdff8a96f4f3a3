import { setImmediate as yieldToLoop } from 'node:timers/promises'

/** How long one request may hold the event loop before it lets others run. */
export const SLICE_MS = 10

/**
 * A request's long loops call the function this returns once per step: every `sliceMs` it
 * yields to the event loop, so other sessions, health checks and stream waits are served while
 * one request renders tens of thousands of results. Cheap when no slice has passed.
 * @example const pace = pacer(); for (const x of many) { await pace(); work(x) }
 */
export function pacer(sliceMs = SLICE_MS): () => Promise<void> | undefined {
  let since = performance.now()
  return () => {
    if (performance.now() - since < sliceMs) return undefined
    return yieldToLoop().then(() => {
      since = performance.now()
    })
  }
}
