/**
 * `--auth SECRET`: an optional shared secret between the agent and the proxy. It travels in a
 * header of its own, so the client's `Authorization` (the upstream's API key) stays untouched,
 * and it never goes further than the proxy: the header is dropped before anything is forwarded.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { doorOfPath, errorBodyOf } from '../doors/index.js'
import type { Logger } from '../log.js'
import { Memo } from '../memo.js'

/** The request header that carries the shared secret. */
export const AUTH_HEADER = 'x-lembas-auth'

/**
 * Refuses every request but `GET /healthz` and the dashboard page (`GET /`) that does not carry `secret` in `x-lembas-auth`, with
 * a 401 in the shape of the API asked (Anthropic's on /v1/messages, OpenAI's elsewhere). The comparison takes the same time whatever the value sent:
 * both sides are hashed first, so neither the secret's bytes nor its length leak through timing.
 * Each refusal is logged (`auth-refused`, once a minute per reason and client): an agent that
 * retries a 401 in silence (Claude Code) would otherwise leave no trace on either side.
 * @example app.use('*', sharedSecret('s3cret', log))
 */
export function sharedSecret(secret: string, log?: Logger): MiddlewareHandler {
  if (secret === '') throw new Error('the shared secret must not be empty')
  const expected = digest(secret)
  const logged = new Memo<number>(64)
  return async (c, next) => {
    // The dashboard page holds no data (it asks for the secret and sends it with /stats).
    if (c.req.method === 'GET' && (c.req.path === '/healthz' || c.req.path === '/')) return next()
    const given = c.req.header(AUTH_HEADER)
    if (given === undefined || !timingSafeEqual(digest(given), expected)) {
      const message =
        given === undefined
          ? `this proxy needs its shared secret in the ${AUTH_HEADER} header (--auth)`
          : `the ${AUTH_HEADER} header does not match the proxy's shared secret (--auth)`
      const reason = given === undefined ? 'missing' : 'wrong'
      // The client by the first word of its user-agent (`claude-cli/2.1.332`), never a header value.
      const agent = (c.req.header('user-agent') ?? '').split(' ')[0]!.slice(0, 60) || 'unknown'
      const now = Date.now()
      if (log && now - (logged.get(reason + ' ' + agent) ?? -Infinity) >= 60_000) {
        logged.set(reason + ' ' + agent, now)
        log.warn('auth-refused', {
          reason,
          path: c.req.path,
          agent,
          hint: `the agent must send the secret in the ${AUTH_HEADER} header (README: Point an agent at it)`,
        })
      }
      return c.json(errorBodyOf(doorOfPath(c.req.path), 'unauthorized', message), 401)
    }
    return next()
  }
}

/**
 * Refuses what a web page in a browser sends from another site (the browser says so in
 * `Sec-Fetch-Site`): a form or a `text/plain` POST needs no CORS consent, and through the proxy
 * it would reach the upstream with the credentials of `--upstream`'s URL. No agent sends it;
 * the dashboard's own requests are same-origin.
 */
export function sameSiteOnly(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.header('sec-fetch-site') !== 'cross-site') return next()
    const message = 'a web page of another site may not use this proxy (Sec-Fetch-Site: cross-site)'
    return c.json(errorBodyOf(doorOfPath(c.req.path), 'forbidden', message), 403)
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}
