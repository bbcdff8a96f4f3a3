import { LembasError } from '../errors.js'

/** The parts of the configured base URL that every upstream request needs. */
export type UpstreamTarget = {
  /** scheme://host[:port], what the connection pool dials. */
  origin: string
  /** The base path without a trailing slash ('' for a bare origin). */
  basePath: string
  /** The base URL's own query parameters (e.g. Azure's api-version), sent on every request. */
  baseQuery: URLSearchParams
  /** Safe to print: no user:pass@, no query string (which may hold a key). */
  displayUrl: string
  /** From user:pass@ in the base URL; used only when the request brings no Authorization. */
  basicAuthorization?: string
}

/**
 * Parses the operator's base URL once, at start-up.
 * @example parseUpstreamTarget('http://127.0.0.1:8080/v1/').displayUrl // 'http://127.0.0.1:8080/v1'
 */
export function parseUpstreamTarget(baseUrl: string): UpstreamTarget {
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    // The raw value may hold credentials, so it is not quoted.
    throw new LembasError('config_invalid', 'upstream base URL is not a valid URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new LembasError(
      'config_invalid',
      `upstream base URL must be http or https, not ${url.protocol}`,
    )
  }
  const basePath = url.pathname.replace(/\/+$/, '')
  const target: UpstreamTarget = {
    origin: url.origin,
    basePath,
    baseQuery: url.searchParams,
    displayUrl: url.origin + basePath,
  }
  if (url.username !== '' || url.password !== '') {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`
    target.basicAuthorization = `Basic ${Buffer.from(credentials).toString('base64')}`
  }
  return target
}

/**
 * The request path under the base path, with the base's query parameters first.
 * @example upstreamPath(target, '/chat/completions?x=1') // '/v1/chat/completions?x=1'
 */
export function upstreamPath(target: UpstreamTarget, path: string): string {
  const withoutFragment = path.split('#', 1)[0] ?? ''
  const queryAt = withoutFragment.indexOf('?')
  const pathname = queryAt === -1 ? withoutFragment : withoutFragment.slice(0, queryAt)
  const query = queryAt === -1 ? '' : withoutFragment.slice(queryAt + 1)
  // A dot segment would let a client climb out of the base path on the upstream host; a server
  // or a proxy before it that decodes `%2f` (nginx) or takes `\` for `/` sees one in `..%2f`.
  if (/(^|\/|%2f|%5c|\\)(\.|%2e){1,2}(\/|%2f|%5c|\\|$)/i.test(pathname)) {
    throw new LembasError('invalid_request', 'request path must not contain . or .. segments')
  }
  const joinedPath =
    target.basePath + (pathname === '' || pathname.startsWith('/') ? pathname : `/${pathname}`)
  const baseQuery = target.baseQuery.toString()
  const fullQuery = [baseQuery, query].filter((part) => part !== '').join('&')
  return (joinedPath === '' ? '/' : joinedPath) + (fullQuery === '' ? '' : `?${fullQuery}`)
}
