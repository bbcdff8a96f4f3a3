import { setImmediate as yieldToLoop } from 'node:timers/promises'

/** How long one request may hold the event loop before it lets others run. */
export const SLICE_MS = 10

/**
 * When the event loop was last let go (or a request began its work, in a fresh turn). One
 * clock for every loop: a loop that starts right after a long step of the same request (a
 * 27 MB result's key, its parse) yields at its first step, instead of starting a slice of its own.
 */
let since = performance.now()

/** A request's work begins: it is in a fresh turn of the event loop, its slice starts now. */
export function turnBegins(): void {
  since = performance.now()
}

/**
 * A request's long loops call the function this returns once per step: once `sliceMs` has
 * passed since the event loop was last let go, it yields, so other sessions, health checks and
 * stream waits are served while one request renders tens of thousands of results. Cheap when
 * no slice has passed.
 * @example const pace = pacer(); for (const x of many) { await pace(); work(x) }
 */
export function pacer(sliceMs = SLICE_MS): () => Promise<void> | undefined {
  return () => {
    if (performance.now() - since < sliceMs) return undefined
    return yieldToLoop().then(turnBegins)
  }
}
