/**
 * The one error class of the proxy, and the closed table of its kinds. Every kind maps to an HTTP
 * status and an OpenAI error `type`, so any failure reaches the client in the OpenAI error shape.
 */
export const ERROR_KINDS = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  unauthorized: { status: 401, type: 'invalid_request_error' },
  forbidden: { status: 403, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  body_too_large: { status: 413, type: 'invalid_request_error' },
  upstream_unreachable: { status: 502, type: 'upstream_error' },
  upstream_bad_response: { status: 502, type: 'upstream_error' },
  upstream_timeout: { status: 504, type: 'upstream_error' },
  store_unavailable: { status: 503, type: 'server_error' },
  /** The proxy is stopping and ended the request (its grace ran out, or a second Ctrl-C). */
  stopping: { status: 503, type: 'server_error' },
  config_invalid: { status: 500, type: 'server_error' },
  internal: { status: 500, type: 'server_error' },
} as const satisfies Record<string, { status: number; type: string }>

export type ErrorKind = keyof typeof ERROR_KINDS

export class LembasError extends Error {
  override readonly name = 'LembasError'
  constructor(
    readonly kind: ErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }

  get status(): number {
    return ERROR_KINDS[this.kind].status
  }
}

/** The OpenAI error body for an error kind. */
export function openAIErrorBody(
  kind: ErrorKind,
  message: string,
): {
  error: { message: string; type: string; param: null; code: ErrorKind }
} {
  return { error: { message, type: ERROR_KINDS[kind].type, param: null, code: kind } }
}
