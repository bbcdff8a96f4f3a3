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
  // Connections, not requests, are watched while it runs: a listener on every request and on
  // every answer cost a small request ~3% more CPU (bench/ab.ts), a connection carries many.
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
  /** The answer a connection is writing, if any (node's own field: one at a time per socket). */
  const answering = (socket: Socket) =>
    (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined
  const inFlight = () => [...sockets].flatMap((socket) => answering(socket) ?? [])
  const watch = (response: ServerResponse) => {
    // Its connection closes after it, taking no other request.
    if (!response.headersSent) response.shouldKeepAlive = false
    response.once('close', () => changed?.())
  }
  /** An answer is done when its bytes have left the process, not when it was written. */
  const unsent = () =>
    [...sockets].some((s) => !s.destroyed && (answering(s) !== undefined || s.writableLength > 0))
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
    options.log.warn('stopping-now', { reason, inFlight: inFlight().length })
    void upstream.destroy(
      new LembasError('stopping', 'lembas-proxy is stopping; send the request again'),
    )
    // A client that no longer reads does not hold the stop: its connection is closed.
    setTimeout(() => http.closeAllConnections(), LAST_BYTES_MS).unref()
  }
  const stop = async (signal: string) => {
    if (stopping) return now(`second ${signal}`)
    stopping = true
    const under = inFlight()
    options.log.info('stopping', { signal, inFlight: under.length, graceMs: options.graceMs })
    // Not http's own close, which destroys idle connections at once, dropping any answer's end
    // still in their buffers: idle ones are ended after what they hold, busy ones after their
    // answer; a request that still comes on one is served, and its connection closed after it.
    net.Server.prototype.close.call(http)
    http.on('request', (_request, response: ServerResponse) => watch(response))
    under.forEach(watch)
    for (const socket of sockets) if (answering(socket) === undefined) socket.end()
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
