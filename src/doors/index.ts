import { chatDoor } from './chat/index.js'
import type { Door } from '../pipeline/door.js'
import { messagesDoor } from './messages/index.js'
import { responsesDoor } from './responses/index.js'

export type { Door, Json } from '../pipeline/door.js'
export { chatDoor, messagesDoor, responsesDoor }

/** Every front door the proxy serves, each under `/v1` + its path. */
export const DOORS: readonly Door[] = [chatDoor, responsesDoor, messagesDoor]
