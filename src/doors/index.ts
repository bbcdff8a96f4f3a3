import { chatDoor } from './chat/index.js'
import { openAIErrorBody, type ErrorKind } from '../errors.js'
import type { Door, Json } from '../pipeline/door.js'
import { messagesDoor } from './messages/index.js'
import { responsesDoor } from './responses/index.js'

export type { Door, Json } from '../pipeline/door.js'
export { chatDoor, messagesDoor, responsesDoor }

/** Every front door the proxy serves, each under `/v1` + its path. */
export const DOORS: readonly Door[] = [chatDoor, responsesDoor, messagesDoor]

/**
 * The door whose API a path is: its own path or one below it (`/v1/messages/count_tokens` is
 * the Messages API's, and its errors are in Anthropic's shape).
 */
export function doorOfPath(path: string): Door | undefined {
  return DOORS.find(
    (door) => path === '/v1' + door.path || path.startsWith('/v1' + door.path + '/'),
  )
}

/** An error in the API's own shape: a door's (Claude Code reads Anthropic's), else OpenAI's. */
export function errorBodyOf(door: Door | undefined, kind: ErrorKind, message: string): Json {
  return door ? door.errorBody(kind, message) : openAIErrorBody(kind, message)
}
