import type { Server } from 'node:http'
import type { ServerType } from '@hono/node-server'
import type { Logger } from '../log.js'

export interface GuardOptions {
  /** Open client connections at most; beyond, a new one is closed at once. */
  readonly maxConnections: number
  /** A connection that has not sent a whole request head in this time is closed. */
  readonly headerTimeoutMs: number
}

/**
 * The listening server's limits, as a proxy trusted with its clients' keys needs them. A socket
 * that sends nothing, or half a request head, for `headerTimeoutMs` is closed; once a head is in,
 * the timer is off (an upstream may think for minutes before its first byte) and an idle
 * keep-alive connection is closed after 65 s. No more than `maxConnections` are open at
 * once, so sockets held open cannot use up the process's file descriptors and starve every other
 * client; refusals are logged, once per 10 s.
 */
export function guardConnections(server: ServerType, options: GuardOptions, log: Logger): void {
  const http = server as Server
  http.maxConnections = options.maxConnections
  http.headersTimeout = options.headerTimeoutMs
  http.requestTimeout = 0
  // Longer than any client's own keep-alive (undici 4 s, browsers 60 s): the client closes an
  // idle connection first, so a request never meets a socket the server is closing (ECONNRESET).
  http.keepAliveTimeout = 65_000
  // Without a 'timeout' listener, Node destroys a socket whose timer runs out.
  http.on('connection', (socket) => socket.setTimeout(options.headerTimeoutMs))
  http.on('request', (request) => request.socket.setTimeout(0))
  let refused = 0
  let reported = 0
  http.on('drop', () => {
    refused++
    const now = Date.now()
    if (now - reported < 10_000) return
    reported = now
    log.warn('connections-refused', { maxConnections: options.maxConnections, refused })
  })
}
