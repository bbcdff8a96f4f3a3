/**
 * Helpers shared by the store backends: the reserved field names, input checks, error shapes and
 * the redacted form of a store URL.
 */
import { LembasError } from '../errors.js'

/**
 * SQLite and Redis keep claims, latest values (and Redis the counter) next to the caller's
 * write-once keys, so the names must be disjoint. Reserved names start with NUL plus a letter; a
 * caller key that starts with NUL gets one more NUL, so it can never look like a reserved name.
 * The reserved prefixes differ in their letter, so a claim and a latest value never meet either.
 */
export const CLAIM_PREFIX = '\u0000claim:'
export const LATEST_PREFIX = '\u0000latest:'
export const COUNTER_FIELD = '\u0000next'

export function kvField(key: string): string {
  return key.startsWith('\u0000') ? '\u0000' + key : key
}

export function claimField(key: string): string {
  return CLAIM_PREFIX + key
}

export function latestField(key: string): string {
  return LATEST_PREFIX + key
}

// ES2024 `String.prototype.isWellFormed`: present in Node 20, missing from the ES2023 lib types.
const isWellFormed = (s: string): boolean =>
  (s as unknown as { isWellFormed(): boolean }).isWellFormed()

/**
 * SQLite and Redis store UTF-8, which cannot hold a lone surrogate: it would come back as U+FFFD
 * and break byte-identical replays. Refuse such strings in every backend instead of corrupting them.
 */
export function checkText(what: string, s: string): void {
  if (typeof s !== 'string') {
    throw new LembasError('internal', `store ${what} must be a string, got ${typeof s}`)
  }
  if (!isWellFormed(s)) {
    throw new LembasError(
      'invalid_request',
      `store ${what} contains an unpaired UTF-16 surrogate, which cannot be stored exactly`,
    )
  }
}

export function checkKeys(scope: string, keys: readonly string[]): void {
  checkText('scope', scope)
  for (const key of keys) checkText('key', key)
}

export function checkEntries(
  scope: string,
  entries: readonly (readonly [key: string, value: string])[],
): void {
  checkText('scope', scope)
  for (const [key, value] of entries) {
    checkText('key', key)
    checkText('value', value)
  }
}

export function checkIdleTtl(idleTtlMs: number): void {
  if (!Number.isSafeInteger(idleTtlMs) || idleTtlMs <= 0) {
    throw new LembasError(
      'config_invalid',
      `store idle TTL must be a positive integer of milliseconds, got ${idleTtlMs}`,
    )
  }
}

export function closedError(kind: string): LembasError {
  return new LembasError('store_unavailable', `${kind} store is closed`)
}

/** The URL with its password replaced by `***`, for messages and logs; also for malformed URLs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) {
      u.password = '***'
      return u.toString()
    }
  } catch {
    // not a URL: the pattern below still finds `:password@`
  }
  return url.replace(/:[^@/]*@/, ':***@')
}
