import { PassThrough, type Readable } from 'node:stream'
import type { Meter } from '../stats/index.js'
import type { UpstreamResponse } from '../upstream/index.js'
import { decodeSse } from '../wire/sse.js'
import type { Door, Json } from './door.js'
import { parseAnswer } from './json.js'

/** A whole answer larger than this is passed on without reading its usage. */
const MAX_READ_BYTES = 64 * 1024 * 1024

/**
 * `--observe`: the upstream's answer goes to the client as it came, byte for byte; on the way,
 * its usage is read as the door reads it (a whole answer, or the events of a stream), so the
 * stats show the tokens and cache hits of the requests the agent really sent.
 */
export function watchUsage(
  door: Door,
  request: Promise<Json | undefined>,
  response: UpstreamResponse,
  meter: Meter,
): { body: Readable; ended: Promise<void> } {
  const body = new PassThrough()
  const type = String(response.headers['content-type'] ?? '')
  const source = response.body
  const ended = type.includes('text/event-stream')
    ? streamUsage(door, request, source, meter)
    : wholeUsage(door, source, meter)
  source.pipe(body)
  source.once('error', (error) => body.destroy(error))
  // A client gone before the end: the upstream's answer is not read on for nobody.
  body.once('close', () => {
    if (!source.readableEnded) source.destroy()
  })
  return { body, ended: ended.catch(() => undefined) }
}

async function wholeUsage(door: Door, source: Readable, meter: Meter): Promise<void> {
  const chunks: Buffer[] = []
  let size = 0
  await new Promise<void>((resolve) => {
    source.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_READ_BYTES) chunks.push(chunk)
    })
    source.once('end', resolve)
    source.once('close', resolve)
    source.once('error', () => resolve())
  })
  if (size > MAX_READ_BYTES) return
  const json = parseAnswer(Buffer.concat(chunks).toString('utf8'))
  const end = json === undefined ? undefined : door.readAnswer(json)
  if (end) meter.usage = end.usage
}

async function streamUsage(
  door: Door,
  request: Promise<Json | undefined>,
  source: Readable,
  meter: Meter,
): Promise<void> {
  // The door's own stream reader sees a copy of the bytes; what it would send is dropped.
  const copy = new PassThrough()
  source.on('data', (chunk: Buffer) => copy.write(chunk))
  source.once('end', () => copy.end())
  source.once('close', () => copy.end())
  source.once('error', () => copy.end())
  // The request as the shadow read it (the copy holds the events meanwhile); none if it failed.
  const read = await request
  if (read === undefined) return void copy.resume()
  const stream = door.openStream(read, () => false)
  for await (const event of decodeSse(copy)) stream.take(event)
  meter.usage = stream.endRound().usage
}
