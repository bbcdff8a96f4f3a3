/**
 * The floor: the least a Node proxy can do. node:http in, undici out, the request body piped to
 * the upstream and the response piped back, headers by allowlist. No parsing, no buffering.
 *
 *   node --import tsx bench/passthrough.ts <upstream base URL, e.g. http://127.0.0.1:9000/v1>
 */
import { createServer } from 'node:http'
import { pipeline } from 'node:stream/promises'
import { Agent, request } from 'undici'

const upstream = new URL(process.argv[2] ?? 'http://127.0.0.1:8080/v1')
const base = upstream.pathname.replace(/\/$/, '')
const dispatcher = new Agent({ keepAliveTimeout: 60_000, connections: 512 })
const REQUEST = new Set(['authorization', 'content-type', 'content-length', 'accept', 'user-agent'])
const RESPONSE = new Set(['content-type', 'content-length', 'cache-control', 'retry-after'])
const allowed = (name: string) =>
  REQUEST.has(name) || (name.startsWith('x-') && !name.startsWith('x-forwarded-'))

const server = createServer(async (req, res) => {
  try {
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === 'string' && allowed(name)) headers[name] = value
    const path = base + (req.url ?? '/').replace(/^\/v1(?=\/|$)/, '')
    const reply = await request(new URL(path, upstream.origin), {
      method: req.method as 'POST',
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? null : req,
      dispatcher,
    })
    const out: Record<string, string | string[]> = {}
    for (const [name, value] of Object.entries(reply.headers))
      if (value !== undefined && RESPONSE.has(name)) out[name] = value
    res.writeHead(reply.statusCode, out)
    await pipeline(reply.body, res)
  } catch {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' })
    res.end('{"error":{"message":"upstream failed","type":"proxy","code":"bad_gateway"}}')
  }
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  process.stdout.write(`passthrough listening on http://127.0.0.1:${port} -> ${upstream}\n`)
})
process.on('SIGTERM', () => process.exit(0))
process.on('SIGINT', () => process.exit(0))
