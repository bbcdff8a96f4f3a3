/**
 * The names a proxy on loopback answers to. A web page can point a name of its own at 127.0.0.1
 * (DNS rebinding): the browser then takes the proxy for the page's own site (`Sec-Fetch-Site:
 * same-origin`) and lets the page read the answers — `/stats`, a session's results through a
 * recall, the upstream's generations on the user's key. The one thing such a request cannot hide
 * is the page's name in `Host`. Ollama and the dev servers of Vite and webpack check it the same way.
 */
import { hostname } from 'node:os'
import type { MiddlewareHandler } from 'hono'
import { doorOfPath, errorBodyOf } from '../doors/index.js'
import { warnOnce, type Logger } from '../log.js'
import { Memo } from '../memo.js'

/** An address only this machine reaches (an IPv4 literal: `127.evil.example` is a name). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host)
}

/** `Host`'s name: no port, no IPv6 brackets, no trailing dot, lower case. */
function hostNameOf(header: string): string {
  const value = header.trim().toLowerCase()
  const name = value.startsWith('[') ? value.slice(1, value.indexOf(']')) : value.split(':')[0]!
  return name.endsWith('.') ? name.slice(0, -1) : name
}

/** Names no page on the internet can be served under: this machine's own. */
function isLocalName(name: string, machine: string): boolean {
  return isLoopback(name) || name === machine || /\.(localhost|local|internal)$/.test(name)
}

/**
 * `--allowed-hosts`: a name as given, or `.example.com` for it and every name below it; `*`
 * turns the check off.
 */
function allows(allowed: readonly string[], name: string): boolean {
  return allowed.some((entry) =>
    entry.startsWith('.') ? name === entry.slice(1) || name.endsWith(entry) : name === entry,
  )
}

/**
 * Refuses a request whose `Host` names neither this machine nor one of `allowed` (lower case, as
 * `--allowed-hosts` is read), with a 403 in
 * the shape of the API asked. A request without `Host` (HTTP/1.0) comes from no browser.
 * @example app.use('*', knownHostsOnly(['proxy.lan'], log))
 */
export function knownHostsOnly(allowed: readonly string[], log: Logger): MiddlewareHandler {
  const machine = hostname().toLowerCase()
  const warned = new Memo<true>(64)
  return async (c, next) => {
    const header = c.req.header('host')
    if (header === undefined) return next()
    const name = hostNameOf(header)
    if (isLocalName(name, machine) || allows(allowed, name)) return next()
    warnOnce(log, warned, 'host-refused', name, {
      host: name,
      hint: 'a name this proxy is reached by goes in --allowed-hosts',
    })
    const message =
      `Host ${name} is not a name of this proxy: a web page can point its own name at a loopback ` +
      `address. If you reach the proxy by this name, add it to --allowed-hosts`
    return c.json(errorBodyOf(doorOfPath(c.req.path), 'forbidden', message), 403)
  }
}
