import { LembasError } from '../errors.js'

/** JSON of a client's request, refused past `maxDepth` levels or when it is not JSON. */
export function parseJson(text: string, maxDepth: number): unknown {
  if (nestingDepth(text) > maxDepth) {
    throw new LembasError('invalid_request', `the request nests deeper than ${maxDepth} levels`)
  }
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new LembasError(
      'invalid_request',
      `the body is not valid JSON: ${withoutExcerpt((error as Error).message)}`,
    )
  }
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
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === 92) i++
      else if (code === 34) inString = false
    } else if (code === 34) inString = true
    else if (code === 123 || code === 91) max = Math.max(max, ++depth)
    else if (code === 125 || code === 93) depth--
  }
  return max
}
