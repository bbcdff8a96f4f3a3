import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import type { Context } from 'hono'
import { LembasError } from '../errors.js'
import { toAbortError } from '../upstream/errors.js'
import { piecesBytes } from '../pipeline/body.js'
import type { UpstreamResponse } from '../upstream/index.js'
import { responseHeadersForClient } from './headers.js'

/**
 * The body's bytes, refused past the limit while they arrive, each chunk shown to `watch` as it
 * comes. Read from node's request itself when there is one: a megabyte body then costs one
 * copy, not a trip through web streams.
 */
export async function readBody(
  c: Context,
  maxBytes: number,
  watch?: { update(chunk: Uint8Array): void },
): Promise<Buffer> {
  const declared = Number(c.req.header('content-length') ?? 0)
  if (declared > maxBytes) throw tooLarge(maxBytes)
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming
  // A body of declared length is copied into place as it arrives: joining megabytes of
  // chunks at its end would hold the event loop (70 ms for 27 MB) after the last one.
  const whole = declared > 0 && Number.isSafeInteger(declared) ? Buffer.allocUnsafe(declared) : null
  const chunks: Buffer[] = []
  let size = 0
  const source: AsyncIterable<Uint8Array> =
    incoming ?? (c.req.raw.body as unknown as AsyncIterable<Uint8Array>) ?? []
  try {
    for await (const chunk of source) {
      const at = size
      size += chunk.byteLength
      if (size > maxBytes) throw tooLarge(maxBytes)
      if (whole && size <= whole.length) whole.set(chunk, at)
      else chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
      watch?.update(chunk)
    }
  } catch (error) {
    // A client that leaves mid-upload aborted its request: not the proxy's failure.
    if (incoming?.destroyed && !(error instanceof LembasError)) throw toAbortError(error)
    throw error
  }
  if (whole && chunks.length === 0) return whole.subarray(0, size)
  if (whole) chunks.unshift(whole.subarray(0, size - piecesBytes(chunks)))
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
}

function tooLarge(maxBytes: number): LembasError {
  return new LembasError(
    'body_too_large',
    `the request body is over the limit of ${maxBytes} bytes (--max-body-mb)`,
  )
}

/** The upstream's own response, as it came: status, allowlisted headers, body streamed. */
export function upstreamResponse(
  response: Omit<UpstreamResponse, 'body'> & { readonly body: Readable },
  passthroughEncoding = false,
): Response {
  const body = [204, 304].includes(response.status)
    ? null
    : (Readable.toWeb(response.body) as ReadableStream)
  return new Response(body, {
    status: response.status,
    headers: responseHeadersForClient(response.headers, { passthroughEncoding }),
  })
}

/** Pulls SSE text from the generator as the client reads; a client gone ends the generator. */
export function sseStream(events: AsyncGenerator<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream({
    async pull(controller) {
      const next = await events.next()
      if (next.done) controller.close()
      else controller.enqueue(encoder.encode(next.value))
    },
    async cancel() {
      await events.return(undefined)
    },
  })
}
