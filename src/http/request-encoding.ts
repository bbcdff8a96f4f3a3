import * as zlib from 'node:zlib'
import { LembasError } from '../errors.js'

/**
 * Request bodies sent compressed (`Content-Encoding`). The Codex CLI signed in with ChatGPT
 * sends its Responses bodies as zstd to the built-in `openai` provider, other clients gzip or
 * deflate theirs: the proxy undoes the coding to read the history, and sends the rebuilt body
 * plain (every API takes a plain body).
 */

type Decode = (bytes: Buffer, options: zlib.ZlibOptions, done: zlib.CompressCallback) => void

interface ZstdZlib {
  zstdDecompress?: Decode
}

/** How each content coding is undone; zstd only on a node that has it (22.15, 23.8 and later). */
const DECODERS: Readonly<Record<string, Decode | undefined>> = {
  gzip: zlib.gunzip,
  'x-gzip': zlib.gunzip,
  // RFC 9110's deflate is zlib-wrapped; some clients send the raw stream.
  // A zlib stream past the limit is too large, not raw: only a stream zlib refuses is tried so.
  deflate: (bytes, options, done) =>
    zlib.inflate(bytes, options, (error, result) =>
      error && (error as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE'
        ? zlib.inflateRaw(bytes, options, done)
        : done(error, result),
    ),
  br: zlib.brotliDecompress,
  zstd: (zlib as ZstdZlib).zstdDecompress,
}

/** The codings a `Content-Encoding` value names, in the order they were applied. */
export function contentCodings(header: string | undefined): string[] {
  return (header ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity')
}

/** Whether this process can undo every one of `codings`. */
export function canDecode(codings: readonly string[]): boolean {
  return codings.every((coding) => DECODERS[coding] !== undefined)
}

/**
 * The body with its codings undone, last applied first, in node's thread pool (the event loop
 * goes on meanwhile); at most `maxBytes` once decoded, as a plain body is.
 */
export async function decodeBody(
  bytes: Buffer,
  codings: readonly string[],
  maxBytes: number,
): Promise<Buffer> {
  let body = bytes
  for (const coding of [...codings].reverse()) {
    const decode = DECODERS[coding]
    if (!decode) throw new Error(`no decoder for ${coding}: ask canDecode first`)
    body = await new Promise<Buffer>((resolve, reject) =>
      decode(body, { maxOutputLength: maxBytes }, (error, result) =>
        error ? reject(decodeError(error, coding, maxBytes)) : resolve(result),
      ),
    )
  }
  return body
}

function decodeError(error: Error, coding: string, maxBytes: number): LembasError {
  if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
    return new LembasError(
      'body_too_large',
      `the request body is over the limit of ${maxBytes} bytes once decoded from ${coding} (--max-body-mb)`,
    )
  return new LembasError(
    'invalid_request',
    `the request body is not valid ${coding} (Content-Encoding): ${error.message}`,
  )
}
