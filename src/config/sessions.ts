import type { SessionSources } from '../session/identity.js'
import type { Loop } from './loop-schema.js'

/** --session-header first, then the headers and body fields agents use (loop.json). */
export function sessionSources(
  loop: Loop,
  sessionHeader: string,
  tenantPrefix?: string,
): SessionSources {
  const sessions = loop.proxy.sessions
  return {
    headers: [
      ...sessions.parent_headers,
      sessionHeader,
      ...sessions.headers.filter((name) => name !== sessionHeader),
    ],
    affinity: sessions.affinity_headers,
    body: sessions.body,
    userPattern: new RegExp(sessions.user_pattern),
    tenantPrefix,
  }
}
