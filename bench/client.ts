/** The benchmark's HTTP client (undici, keep-alive) and the statistics it reports. */
import { performance } from 'node:perf_hooks'
import { Client, Pool, type Dispatcher } from 'undici'

export interface Target {
  name: string
  /** Origin, e.g. http://127.0.0.1:1234 */
  url: string
  /** Extra headers this target needs (Portkey's provider and custom host). */
  headers: Record<string, string>
  /** Keeps state across requests (lembas): needs each session's first request before steps. */
  stateful: boolean
  pid?: number
}

export interface Sample {
  status: number
  totalMs: number
  /** Time to the first byte of the response body. */
  ttfbMs: number
  bytes: number
  text?: string
}

/** Where a request goes and what only the last event of a complete stream carries. */
export interface Wire {
  path: string
  streamEnd: string
}

const CHAT: Wire = { path: '/v1/chat/completions', streamEnd: '[DONE]' }
/** The end of a stream is looked for in its last bytes (the final event may be long). */
const END_WINDOW = 16 * 1024

export function dispatcherFor(target: Target, connections: number): Dispatcher {
  return connections === 1
    ? new Client(target.url, { keepAliveTimeout: 60_000, pipelining: 1 })
    : new Pool(target.url, { connections, keepAliveTimeout: 60_000, pipelining: 1 })
}

export function headersFor(target: Target, session: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    authorization: 'Bearer bench-key',
    'x-session-id': session,
    ...target.headers,
  }
}

/**
 * One POST (to the chat door unless `wire` says otherwise); times the whole exchange and the
 * first body byte. Keeps the text of an error.
 */
export async function send(
  dispatcher: Dispatcher,
  headers: Record<string, string>,
  body: Buffer,
  wire: Wire = CHAT,
): Promise<Sample> {
  const started = performance.now()
  const response = await dispatcher.request({ method: 'POST', path: wire.path, headers, body })
  let ttfb = -1
  let bytes = 0
  const chunks: Buffer[] = []
  let last: Buffer | undefined
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    if (ttfb < 0) ttfb = performance.now() - started
    bytes += chunk.length
    last =
      !last || chunk.length >= END_WINDOW
        ? chunk
        : Buffer.concat([last, chunk]).subarray(-END_WINDOW)
    if (response.statusCode !== 200 && bytes < 4096) chunks.push(chunk)
  }
  const totalMs = performance.now() - started
  const sample: Sample = {
    status: response.statusCode,
    totalMs,
    ttfbMs: ttfb < 0 ? totalMs : ttfb,
    bytes,
  }
  if (response.statusCode !== 200) sample.text = Buffer.concat(chunks).toString().slice(0, 2000)
  else if (
    String(response.headers['content-type']).startsWith('text/event-stream') &&
    !last?.includes(wire.streamEnd)
  ) {
    // A stream that failed after its first byte still has status 200: count it as an error.
    sample.status = 599
    sample.text =
      `the stream ended without ${wire.streamEnd}: ` + (last?.toString().slice(-500) ?? '')
  }
  return sample
}

export interface Summary {
  n: number
  p50: number
  p90: number
  p99: number
  mean: number
  min: number
  max: number
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b)
  const n = sorted.length
  const at = (p: number) => {
    if (n === 0) return NaN
    const rank = (p / 100) * (n - 1)
    const lo = Math.floor(rank)
    const hi = Math.ceil(rank)
    return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo)
  }
  return {
    n,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    mean: n ? sorted.reduce((a, b) => a + b, 0) / n : NaN,
    min: n ? sorted[0]! : NaN,
    max: n ? sorted[n - 1]! : NaN,
  }
}

export const round = (value: number, digits = 3): number =>
  Number.isFinite(value) ? Number(value.toFixed(digits)) : value

/**
 * One chat request of a session, timed (the in-process benches: first-request, restart, elide):
 * the whole answer read, anything but a 200 thrown.
 */
export async function postSession(url: string, body: Buffer, session: string): Promise<number> {
  const started = performance.now()
  const response = await fetch(url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body,
  })
  await response.text()
  if (response.status !== 200) throw new Error(`status ${response.status}`)
  return performance.now() - started
}
