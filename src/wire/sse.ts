import { LembasError } from '../errors.js'

/** One dispatched server-sent event. `event` is absent for the default 'message' type. */
export type SseEvent = { event?: string; data: string }

/** The data payload OpenAI-compatible servers send last; it is not JSON. */
export const SSE_DONE = '[DONE]'

// A larger event than any sane chunk; without a cap a newline-free upstream grows memory forever.
const DEFAULT_MAX_EVENT_CHARS = 32 * 1024 * 1024

/**
 * Decodes an SSE byte stream (WHATWG HTML §9.2.6): lines end in \n, \r\n or \r; `data:` lines
 * are joined with \n; comments and unknown fields are ignored; a blank line dispatches. Unlike
 * the spec, an event left without its blank line at end of stream is still dispatched.
 * @example for await (const { data } of decodeSse(response.body)) if (data === SSE_DONE) break
 */
export async function* decodeSse(
  chunks: AsyncIterable<Uint8Array>,
  options: { maxEventChars?: number } = {},
): AsyncGenerator<SseEvent> {
  const maxEventChars = options.maxEventChars ?? DEFAULT_MAX_EVENT_CHARS
  // stream mode keeps a multi-byte character split across chunks; the BOM is dropped, as the spec says.
  const decoder = new TextDecoder('utf-8')
  const event = new PendingEvent(maxEventChars)
  let partialLine = ''
  let skipLineFeed = false // the previous text ended in \r, which may be half of \r\n

  function* feed(text: string): Generator<SseEvent> {
    if (skipLineFeed && text !== '') {
      skipLineFeed = false
      if (text.startsWith('\n')) text = text.slice(1)
    }
    let lineStart = 0
    for (const match of text.matchAll(/\r\n|\r|\n/g)) {
      const line = partialLine + text.slice(lineStart, match.index)
      partialLine = ''
      lineStart = match.index + match[0].length
      if (match[0] === '\r' && lineStart === text.length) skipLineFeed = true
      const dispatched = event.takeLine(line)
      if (dispatched !== undefined) yield dispatched
    }
    partialLine += text.slice(lineStart)
    if (partialLine.length > maxEventChars) throw eventTooLarge(maxEventChars)
  }

  for await (const chunk of chunks) {
    yield* feed(decoder.decode(chunk, { stream: true }))
  }
  yield* feed(decoder.decode())
  if (partialLine !== '') event.takeLine(partialLine)
  const last = event.takeLine('')
  if (last !== undefined) yield last
}

/**
 * Frames one data payload as an SSE event; a payload with line breaks becomes several data lines.
 * @example encodeSseData('{"a":1}') // 'data: {"a":1}\n\n'
 */
export function encodeSseData(data: string): string {
  return data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join('')
    .concat('\n')
}

/** The fields of the event being read; `takeLine` returns the event a blank line dispatches. */
class PendingEvent {
  #type = ''
  #data: string[] = []
  #dataChars = 0

  constructor(readonly maxEventChars: number) {}

  takeLine(line: string): SseEvent | undefined {
    if (line === '') return this.#dispatch()
    if (line.startsWith(':')) return undefined
    const colonAt = line.indexOf(':')
    const field = colonAt === -1 ? line : line.slice(0, colonAt)
    let value = colonAt === -1 ? '' : line.slice(colonAt + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'event') this.#type = value
    else if (field === 'data') {
      this.#data.push(value)
      this.#dataChars += value.length + 1
      if (this.#dataChars > this.maxEventChars) throw eventTooLarge(this.maxEventChars)
    }
    // `id` and `retry` steer reconnection, which a proxy never does; other fields are ignored.
    return undefined
  }

  #dispatch(): SseEvent | undefined {
    const type = this.#type
    const data = this.#data
    this.#type = ''
    this.#data = []
    this.#dataChars = 0
    if (data.length === 0) return undefined
    return type === '' ? { data: data.join('\n') } : { event: type, data: data.join('\n') }
  }
}

function eventTooLarge(maxEventChars: number): LembasError {
  return new LembasError(
    'upstream_bad_response',
    `upstream sent a server-sent event longer than ${maxEventChars} characters`,
  )
}
