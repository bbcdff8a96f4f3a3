/**
 * `--record DIR`: one JSON line per request (its door: chat, responses or messages), as the client sent it and as it went upstream,
 * appended to `<dir>/<date>-<pid>.jsonl`. No headers are written at all, and string fields named
 * like a credential (api_key, apiKey, authorization, …) are replaced inside both bodies. The
 * request path never waits for the disk and never sees an error from it: a failed write is logged
 * and recording stops.
 */
import { mkdirSync, createWriteStream, type WriteStream } from 'node:fs'
import { join } from 'node:path'
import { silentLogger, type Logger } from '../log.js'
import type { Recorder } from '../pipeline/handle.js'

export const REDACTED = 'REDACTED'

/** Field names whose string values are never written: api_key, apiKey, x-api-key, authorization, … */
const SECRET_WORDS =
  /api[-_]?key|authorization|secret|password|passwd|access[-_]?token|auth[-_]?token|refresh[-_]?token|bearer|credential/i
/** …and a bare `token`, or one that ends a name (`x_token`), but not `max_tokens`. */
const SECRET_NAME = new RegExp(`${SECRET_WORDS.source}|(?:^|[-_])token$`, 'i')

/**
 * A body that may hold such a field: a quoted name containing one of the words, followed by a
 * colon (an escaped name, `\u…`, is checked the slow way too). Anything else is written as it is.
 */
const MAYBE_SECRET = new RegExp(
  `"[^"\\\\]*(?:${SECRET_WORDS.source})[^"\\\\]*"\\s*:|"(?:[^"\\\\]*[-_])?token"\\s*:`,
  'i',
)

export interface RecorderOptions {
  readonly log?: Logger
  /** Clock for `at` and the file's date; tests pin it. */
  readonly now?: () => Date
  /** Lines waiting for the disk beyond this many bytes are dropped (and logged). */
  readonly maxBufferBytes?: number
}

export interface FileRecorder extends Recorder {
  /** The file this process appends to. */
  readonly path: string
  /** Writes what is queued, then closes the file. Later records are ignored. */
  close(): Promise<void>
}

/**
 * Opens (creates) `dir` and the day's file for this process. Throws only here, at start-up, when
 * the folder cannot be made; from then on nothing it does can fail a request.
 */
export function createRecorder(dir: string, options: RecorderOptions = {}): FileRecorder {
  const log = options.log ?? silentLogger
  const now = options.now ?? (() => new Date())
  const maxBuffer = options.maxBufferBytes ?? 64 * 1024 * 1024
  // Records hold whole prompts and results: readable by the proxy's user only.
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const path = join(dir, `${now().toISOString().slice(0, 10)}-${process.pid}.jsonl`)
  const stream: WriteStream = createWriteStream(path, { flags: 'a', encoding: 'utf8', mode: 0o600 })
  let broken = false
  let closed = false
  let dropped = 0
  stream.on('error', (error) => {
    if (!broken) log.warn('record-failed', { path, message: error.message })
    broken = true
  })

  function write(entry: Parameters<Recorder['record']>[0], at: string): void {
    if (broken) return
    try {
      const line =
        '{"at":' +
        JSON.stringify(at) +
        ',"door":' +
        JSON.stringify(entry.door) +
        ',"session":' +
        JSON.stringify(entry.session ?? null) +
        ',"received":' +
        redactedJson(entry.received) +
        ',"sent":' +
        redactedJson(entry.sent) +
        '}\n'
      if (stream.writableLength + line.length > maxBuffer) {
        if (dropped++ === 0) log.warn('record-dropped', { path, reason: 'the disk is behind' })
        return
      }
      stream.write(line)
    } catch (error) {
      log.warn('record-failed', { path, message: (error as Error).message })
    }
  }

  return {
    path,
    record(entry) {
      if (closed || broken) return
      try {
        const at = now().toISOString()
        // The request goes upstream first; the line is built on a later turn of the event loop.
        setImmediate(() => write(entry, at))
      } catch (error) {
        log.warn('record-failed', { path, message: (error as Error).message })
      }
    },
    async close() {
      if (closed) return
      closed = true
      // Immediates run in order: once this one has, every queued line has been written.
      await new Promise<void>((resolve) => setImmediate(resolve))
      if (dropped > 0) log.warn('record-dropped', { path, lines: dropped })
      await new Promise<void>((resolve) => {
        if (stream.destroyed) return resolve()
        stream.end(() => resolve())
        stream.once('error', () => resolve())
      })
    },
  }
}

/**
 * A JSON body as one line, with every credential-like string field replaced. A body with no such
 * field name is written as it came (only its line breaks, which JSON allows only between tokens,
 * become spaces); one with such a name is parsed, redacted and written again.
 */
export function redactedJson(body: string): string {
  if (!MAYBE_SECRET.test(body) && !body.includes('\\u')) return body.replace(/[\r\n]+/g, ' ')
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    // Not JSON (never so for a body the proxy accepted): kept as a string, redacted by pattern.
    return JSON.stringify(body.replace(MAYBE_SECRET_VALUE, `$1"${REDACTED}"`))
  }
  return JSON.stringify(redact(value))
}

const MAYBE_SECRET_VALUE = new RegExp(
  `("[^"\\\\]*(?:${SECRET_NAME.source})[^"\\\\]*"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`,
  'gi',
)

/** A credential-like field's value: a string, or each string of a list (`api_keys`), replaced. */
function redactedSecret(value: unknown): unknown {
  if (typeof value === 'string') return REDACTED
  if (Array.isArray(value))
    return value.map((item) => (typeof item === 'string' ? REDACTED : redact(item)))
  return redact(value)
}

/** A copy of `value` with every string under a credential-like name replaced by "REDACTED". */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact)
  if (value === null || typeof value !== 'object') return value
  // No prototype: a "__proto__" field stays a field.
  const out: Record<string, unknown> = Object.create(null)
  for (const [name, inner] of Object.entries(value)) {
    out[name] = SECRET_NAME.test(name) ? redactedSecret(inner) : redact(inner)
  }
  return out
}
