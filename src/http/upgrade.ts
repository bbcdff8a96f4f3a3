import type { Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { ServerType } from '@hono/node-server'

const REFUSAL = JSON.stringify({
  error: {
    message:
      'lembas-proxy takes HTTP requests only: WebSocket transports are not proxied (send the request as an HTTP POST)',
    type: 'invalid_request_error',
    code: 'websocket_unsupported',
  },
})

/**
 * Answers a WebSocket upgrade (the Codex CLI's Responses transport, tried first with its
 * built-in `openai` provider) with 426 at once: the proxy shapes HTTP bodies, not frames, and
 * Codex then goes over HTTP straight away. Answered as a plain GET instead (404, 200), Codex
 * tried six more times, 6.5 s, before it did.
 */
export function refuseUpgrades(server: ServerType): void {
  ;(server as Server).on('upgrade', (_request, socket: Duplex) => {
    socket.end(
      'HTTP/1.1 426 Upgrade Required\r\n' +
        'connection: close\r\n' +
        'content-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(REFUSAL)}\r\n\r\n` +
        REFUSAL,
    )
  })
}
