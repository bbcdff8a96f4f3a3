import { LembasError } from '../errors.js'
import { pacer } from '../pace/index.js'
import { arraySpan, closingQuote, skipSpace, type MessagesSpan } from '../wire/json-scan.js'

/** JSON of a client's request, refused past `maxDepth` levels or when it is not JSON. */
export function parseJson(text: string, maxDepth: number): unknown {
  if (Number.isFinite(maxDepth) && nestingDepth(text) > maxDepth) throw tooDeep(maxDepth)
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new LembasError(
      'invalid_request',
      `the body is not valid JSON: ${withoutExcerpt((error as Error).message)}`,
    )
  }
}

function tooDeep(maxDepth: number): LembasError {
  return new LembasError('invalid_request', `the request nests deeper than ${maxDepth} levels`)
}

/** JSON of an upstream answer; undefined when it is not JSON (it then goes on as it came). */
export function parseAnswer(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * V8 quotes up to 20 characters of the input in some parse errors (`Unexpected token 'C',
 * ..."api_key":CANARY-a"... is not valid JSON`). The message is logged, and those characters can
 * be a key or a prompt: they are cut. The offending character itself stays.
 */
function withoutExcerpt(message: string): string {
  return message.replace(/, (?:\.\.\.)?"[\s\S]*"(?:\.\.\.)? is not valid JSON$/, '')
}

/** Bracket depth outside strings; one pass over the text, no parse. */
export function nestingDepth(text: string): number {
  const state = { at: 0, depth: 0, max: 0 }
  depthScan(text, text.length, state)
  return state.max
}

/** nestingDepth in steps (of a megabyte), with the event loop free between them. */
export async function nestingDepthPaced(text: string, step = WHOLE_PARSE_BYTES): Promise<number> {
  const pace = pacer()
  const state = { at: 0, depth: 0, max: 0 }
  while (state.at < text.length) {
    await pace()
    depthScan(text, Math.min(text.length, state.at + step), state)
  }
  return state.max
}

/**
 * Scans from `state.at` to about `to`, counting brackets outside strings. A string is skipped
 * whole to its closing quote (a native search), so `state.at` may end past `to`, never inside
 * a string; an unclosed one ends the scan.
 */
function depthScan(text: string, to: number, state: { at: number; depth: number; max: number }) {
  let { depth, max } = state
  let i = state.at
  while (i < to) {
    const code = text.charCodeAt(i++)
    if (code === 34) {
      const quote = closingQuote(text, i)
      i = quote === -1 ? text.length : quote + 1
    } else if (code === 123 || code === 91) max = Math.max(max, ++depth)
    else if (code === 125 || code === 93) depth--
  }
  Object.assign(state, { at: i, depth, max })
}

/** parseJson of a text too big to check in one go: the depth is counted in steps first. */
async function parseJsonPaced(text: string, maxDepth: number): Promise<unknown> {
  if (text.length <= WHOLE_PARSE_BYTES) return parseJson(text, maxDepth)
  if ((await nestingDepthPaced(text)) > maxDepth) throw tooDeep(maxDepth)
  return parseJson(text, Number.POSITIVE_INFINITY)
}

/** Bodies up to this size are parsed in one go: ~5 ms a MB holds the event loop that long. */
export const WHOLE_PARSE_BYTES = 1 << 20

/**
 * Past this size a body's history is decoded and parsed element by element. A string of more
 * than about 128 KB goes to V8's large-object space, whose allocation is several times dearer
 * and which only a full collection frees: a 1 MB body decoded whole took 7 ms, in 64 KB pieces
 * 1.5, and parsing it 9 ms against 3.3 (`bench/README.md`).
 */
export const SLICED_PARSE_BYTES = 1 << 16

/**
 * A request body, parsed so that no step holds the event loop for long and no text of it is
 * decoded whole: past SLICED_PARSE_BYTES its `key` array element by element, with pauses
 * between (its elements sit two levels deep), and the rest around it in one go. Any shape that
 * does not fit is parsed whole, for its plain error.
 */
export async function parseRequest(bytes: Buffer, key: string, maxDepth: number): Promise<unknown> {
  return (await parseBody(bytes, key, maxDepth)).value
}

/** parseRequest, with the span of the `key` array when it was found on the way (a large body). */
export async function parseBody(
  bytes: Buffer,
  key: string,
  maxDepth: number,
): Promise<{ readonly value: unknown; readonly span?: MessagesSpan }> {
  const whole = () => ({ value: parseJson(bytes.toString('utf8'), maxDepth) })
  if (bytes.length <= SLICED_PARSE_BYTES) return whole()
  const span = await arraySpan(bytes, key, Number.MAX_SAFE_INTEGER)
  if (!span) return whole()
  const around =
    bytes.toString('utf8', 0, span.arrayStart) + '[]' + bytes.toString('utf8', span.arrayEnd + 1)
  const request = parseJson(around, maxDepth)
  // A second array of that name would be the one JSON.parse keeps: not ours to split.
  if (!isRecord(request) || !Array.isArray(request[key]) || request[key].length > 0) return whole()
  request[key] = await parseElements(bytes, span.arrayStart + 1, span.ends, maxDepth - 2)
  return { value: request, span }
}

/**
 * The elements of an array, parsed one by one with pauses between: `from` is just inside its
 * `[`, `ends` the index just after each element (arrayTail's).
 */
export async function parseElements(
  bytes: Buffer,
  from: number,
  ends: readonly number[],
  maxDepth: number,
): Promise<unknown[]> {
  const pace = pacer()
  const out: unknown[] = []
  let start = from
  for (const end of ends) {
    await pace()
    const at = skipComma(bytes, start)
    // One huge element (an answer with thousands of parallel calls): split on its own array.
    const nested =
      end - at > WHOLE_PARSE_BYTES ? await nestedArray(bytes.subarray(at, end)) : undefined
    out.push(
      nested === undefined
        ? await parseJsonPaced(bytes.toString('utf8', at, end), maxDepth)
        : await parseRequest(bytes.subarray(at, end), nested, maxDepth),
    )
    start = end
  }
  return out
}

/** The arrays an item may hold many of: a chat answer's calls, a message's blocks. */
const NESTED_ARRAYS = ['tool_calls', 'content']

/** The first of NESTED_ARRAYS an element holds. */
async function nestedArray(element: Buffer): Promise<string | undefined> {
  for (const name of NESTED_ARRAYS) if (await arraySpan(element, name, 1)) return name
  return undefined
}

/** Past the spaces and the comma before an array element. */
export function skipComma(bytes: Buffer, from: number): number {
  let i = skipSpace(bytes, from)
  if (bytes[i] === 44) i = skipSpace(bytes, i + 1)
  return i
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
