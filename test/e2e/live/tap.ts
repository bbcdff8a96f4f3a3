/**
 * A pass-through between the agent and the proxy that records what the agent sent and what it
 * got back, so the test can see the client's side too (the fake upstream sees the other).
 */
import { once } from 'node:events'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface TappedExchange {
  readonly method: string
  readonly path: string
  /** The agent's request body. */
  readonly body: string
  readonly json: any
  /** What the proxy answered, as the agent received it (SSE text or JSON). */
  response: string
  status: number
}

export interface Tap {
  /** The tap's base URL: point the agent at `${url}/v1`. */
  readonly url: string
  readonly exchanges: TappedExchange[]
  close(): Promise<void>
}

/** `onAnswer` runs when each answer has been passed on to the agent in full. */
export async function startTap(
  target: string,
  onAnswer?: (exchange: TappedExchange) => void,
): Promise<Tap> {
  const to = new URL(target)
  const exchanges: TappedExchange[] = []
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
    incoming.on('end', () => {
      const body = Buffer.concat(chunks)
      const text = body.toString('utf8')
      let json: any
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      const exchange: TappedExchange = {
        method: incoming.method ?? '',
        path: incoming.url ?? '',
        body: text,
        json,
        response: '',
        status: 0,
      }
      exchanges.push(exchange)
      const headers = { ...incoming.headers, host: to.host, 'content-length': String(body.length) }
      delete headers['transfer-encoding']
      const forward = httpRequest(
        {
          hostname: to.hostname,
          port: to.port,
          method: incoming.method,
          path: incoming.url,
          headers,
        },
        (answer) => {
          exchange.status = answer.statusCode ?? 0
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.on('data', (chunk: Buffer) => {
            exchange.response += chunk.toString('utf8')
            outgoing.write(chunk)
          })
          answer.on('end', () => {
            outgoing.end()
            onAnswer?.(exchange)
          })
          answer.on('error', () => outgoing.destroy())
        },
      )
      forward.on('error', () => outgoing.destroy())
      outgoing.on('close', () => {
        if (!outgoing.writableFinished) forward.destroy() // the agent went away
      })
      forward.end(body)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    async close() {
      const closed = once(server, 'close')
      server.close()
      server.closeAllConnections()
      await closed
    },
  }
}
