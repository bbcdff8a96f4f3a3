import { LembasError } from '../errors.js'

/** What an error message may say about the upstream: never its credentials or query string. */
export type UpstreamErrorContext = {
  /** The base URL without user:pass@ and without a query string. */
  displayUrl: string
  timeoutMs: number
  connectTimeoutMs: number
}

/** The error a caller sees when its own signal ended the call; `name` is 'AbortError' either way. */
export function toAbortError(cause: unknown): Error {
  if (cause instanceof Error && cause.name === 'AbortError') return cause
  const error = new Error('the upstream request was aborted', { cause })
  error.name = 'AbortError'
  return error
}

/** True for any error `toAbortError` would return, and for DOMException aborts. */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError'
}

/**
 * Maps an undici or socket failure to a LembasError kind; anything unrecognised (a bug on our
 * side, such as an invalid header) is returned unchanged so it surfaces as an internal error.
 * @example toUpstreamError(econnrefused, context).message
 * // 'upstream http://127.0.0.1:8080/v1 refused the connection (ECONNREFUSED)'
 */
export function toUpstreamError(error: unknown, context: UpstreamErrorContext): unknown {
  if (error instanceof LembasError || isAbortError(error)) return error
  const code = errorCode(error)
  if (code === undefined) return error
  const upstream = `upstream ${context.displayUrl}`
  const fail = (kind: 'upstream_unreachable' | 'upstream_bad_response', what: string) =>
    new LembasError(kind, `${upstream} ${what} (${code})`, { cause: error })

  switch (code) {
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new LembasError(
        'upstream_timeout',
        `upstream did not answer within ${seconds(context.timeoutMs)} (--upstream-timeout-ms)`,
        { cause: error },
      )
    case 'UND_ERR_BODY_TIMEOUT':
      return new LembasError(
        'upstream_timeout',
        `upstream sent nothing for ${seconds(context.timeoutMs)} in the middle of its answer (--upstream-timeout-ms)`,
        { cause: error },
      )
    case 'UND_ERR_CONNECT_TIMEOUT':
      return fail(
        'upstream_unreachable',
        `did not accept the connection within ${seconds(context.connectTimeoutMs)}`,
      )
    case 'ECONNREFUSED':
      return fail('upstream_unreachable', 'refused the connection')
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return fail('upstream_unreachable', 'could not be resolved')
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return fail('upstream_unreachable', 'closed the connection')
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ETIMEDOUT':
      return fail('upstream_unreachable', 'is not reachable')
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
    case 'UND_ERR_RES_EXCEEDED_MAX_SIZE':
      return fail('upstream_bad_response', 'sent a malformed response')
  }
  if (code.startsWith('HPE_')) return fail('upstream_bad_response', 'sent a malformed response')
  if (code.startsWith('Z_') || code === 'ERR_BROTLI_DECOMPRESSION_FAILED')
    return fail('upstream_bad_response', 'sent a body its Content-Encoding does not decode')
  // TLS failures carry OpenSSL codes (CERT_HAS_EXPIRED, ERR_TLS_CERT_ALTNAME_INVALID, …).
  if (code.includes('CERT') || code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL')) {
    return fail('upstream_unreachable', 'failed the TLS handshake')
  }
  return error
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') return code
  // undici 7's parser errors often carry no llhttp code; the name still says what happened.
  if (error instanceof Error && error.name === 'HTTPParserError') return 'HPE_PARSER_ERROR'
  // Happy-eyeballs connects (localhost → ::1 and 127.0.0.1) fail with an AggregateError.
  if (error instanceof AggregateError) return errorCode(error.errors[0])
  return undefined
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`
}
