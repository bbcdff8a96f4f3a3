import { setFlagsFromString } from 'node:v8'

/**
 * Lets V8's old space grow to (1 + percent/100) times what a full collection left live before
 * it starts the next one (`--heap-growth-percent`; 0 leaves V8's own rule, and so does node's
 * own `--heap-growing-percent` on its command line, which is the user's choice already).
 *
 * Why: V8 starts marking the old space as soon as the room left under its limit is smaller than
 * its young generation (16 MB a semi-space on Node 20). Its own rule sets the limit at about
 * 1.3–1.8 times what is live once the process has paused (its memory reducer, the proxy's idle
 * collection), and a proxy's live heap is small: 20 MB live, a 30 MB limit. Each large request
 * then promotes a few megabytes (its body's buffers count), and the proxy ran a full collection
 * every 3 to 5 requests of 1 MB, about 20 ms of marking each, until the load ended
 * (bench/after-idle.ts). At 3 times what is live the room stays larger than the young
 * generation. V8 reads the flag at every collection, so setting it at start-up is enough.
 * Returns whether it was set.
 */
export function setHeapGrowth(
  percent: number,
  execArgv: readonly string[] = process.execArgv,
): boolean {
  if (percent <= 0 || execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg)))
    return false
  setFlagsFromString(`--heap-growing-percent=${percent}`)
  return true
}
