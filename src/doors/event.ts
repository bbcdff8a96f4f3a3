import { LembasError } from '../errors.js'
import { isRecord } from '../wire/chat.js'
import type { Json } from '../pipeline/door.js'

/** An upstream stream event's data as an object; anything else is a bad upstream response. */
export function parseEvent(data: string): Json {
  let value: unknown
  try {
    value = JSON.parse(data)
  } catch {
    throw new LembasError('upstream_bad_response', 'upstream sent an event that is not JSON')
  }
  if (!isRecord(value))
    throw new LembasError('upstream_bad_response', 'upstream sent an event that is not an object')
  return value
}
