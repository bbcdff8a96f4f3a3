import type { Server, ServerResponse } from 'node:http'
import net, { type Socket } from 'node:net'
import type { ServerType } from '@hono/node-server'
import { LembasError } from '../errors.js'
import type { Logger } from '../log.js'
import type { Upstream } from '../upstream/index.js'

/** After the requests were ended, their answers' last bytes have this long to go out. */
const LAST_BYTES_MS = 1000

export interface Stopper {
  /**
   * Stops taking requests, lets those under way finish (at most `graceMs`), then runs `after`
   * (hand on, close the store) and exits. A second call while it waits ends them at once.
   */
  stop(signal: string): Promise<void>
  /** Ends every request under way now, each with a `stopping` error in its API's shape. */
  now(reason: string): void
}

/**
 * A graceful stop that cannot hang: a request waiting on a stalled upstream, a recall round that
 * still needs the store, a slow client still reading its answer are each given the grace, and
 * the store is closed only after them; past the grace, each gets an error its client can retry.
 */
export function stopper(
  server: ServerType,
  upstream: Upstream,
  options: { readonly graceMs: number; readonly log: Logger; readonly after: () => Promise<void> },
): Stopper {
  const http = server as Server
  const inFlight = new Set<ServerResponse>()
  const sockets = new Set<Socket>()
  let changed: (() => void) | undefined
  let stopping = false
  let forced = false
  http.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => {
      sockets.delete(socket)
      changed?.()
    })
  })
  http.on('request', (_request, response: ServerResponse) => {
    inFlight.add(response)
    // Its connection closes after it, taking no other request.
    if (stopping) response.shouldKeepAlive = false
    response.once('close', () => {
      inFlight.delete(response)
      changed?.()
    })
  })
  /** An answer is done when its bytes have left the process, not when it was written. */
  const unsent = () =>
    inFlight.size > 0 || [...sockets].some((s) => !s.destroyed && s.writableLength > 0)
  const settled = async () => {
    while (unsent()) {
      await new Promise<void>((resolve) => {
        changed = resolve
        for (const socket of sockets) if (socket.writableLength > 0) socket.once('drain', resolve)
      })
      changed = undefined
    }
  }
  const now = (reason: string) => {
    if (forced) return
    forced = true
    options.log.warn('stopping-now', { reason, inFlight: inFlight.size })
    void upstream.destroy(
      new LembasError('stopping', 'lembas-proxy is stopping; send the request again'),
    )
    // A client that no longer reads does not hold the stop: its connection is closed.
    setTimeout(() => http.closeAllConnections(), LAST_BYTES_MS).unref()
  }
  const stop = async (signal: string) => {
    if (stopping) return now(`second ${signal}`)
    stopping = true
    options.log.info('stopping', { signal, inFlight: inFlight.size, graceMs: options.graceMs })
    // Not http's own close, which destroys idle connections at once, dropping any answer's end
    // still in their buffers: idle ones are ended after what they hold, busy ones after their
    // answer.
    net.Server.prototype.close.call(http)
    const busy = new Set<unknown>()
    for (const response of inFlight) {
      busy.add(response.socket)
      if (!response.headersSent) response.shouldKeepAlive = false
    }
    for (const socket of sockets) if (!busy.has(socket)) socket.end()
    if (unsent()) {
      const grace = setTimeout(() => now('grace'), options.graceMs)
      await settled()
      clearTimeout(grace)
    }
    await options.after()
    process.exit(0)
  }
  return { stop, now }
}
