import type { ShellEnvelope } from './define-profile.js'

/**
 * The output inside an agent's shell wrapper, when the run succeeded and its output is whole;
 * undefined for a wrapper of a failed or cut run (it must not pass for a file's lines). Output
 * that no wrapper spots is raw output, as it is.
 */
export function shellOutput(
  text: string,
  envelopes: readonly ShellEnvelope[],
  /** A cut output is still the output to compare (a listing's or search's `Same result as`). */
  cutToo = false,
): string | undefined {
  for (const envelope of envelopes) {
    if (!envelope.any.test(text)) continue
    const body = envelope.json
      ? jsonOutput(text, envelope.json)
      : envelope.success?.exec(text)?.groups?.body
    return body !== undefined && !cutToo && envelope.cut?.test(body) ? undefined : body
  }
  return text
}

function jsonOutput(text: string, fields: NonNullable<ShellEnvelope['json']>): string | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  const output = field(value, fields.output)
  return typeof output === 'string' && field(value, fields.exit) === 0 ? output : undefined
}

function field(value: unknown, path: string): unknown {
  let here = value
  for (const key of path.split('.')) {
    if (typeof here !== 'object' || here === null || Array.isArray(here)) return undefined
    here = (here as Record<string, unknown>)[key]
  }
  return here
}
