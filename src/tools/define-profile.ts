/**
 * Agent tool profiles are data: which tool names mean a read, a listing or a search, which
 * arguments name the file and the lines, and how results are numbered.
 */
export type ToolKind = 'read' | 'write' | 'list' | 'glob' | 'grep' | 'search' | 'other'

/** How a read's lines are asked for; normalised to 1-based inclusive by classify. */
export type RangeRule =
  /** offset + line count; base 0 or 1, or taken from the tool's schema ("0-based" in its description). */
  | { readonly offset: string; readonly limit: string; readonly base: 0 | 1 | 'schema' }
  /** first and last line, 1-based inclusive. */
  | { readonly start: string; readonly end: string }
  /** [first, last] in one argument; -1 = end of file. */
  | { readonly pair: string }

export interface ToolRule {
  readonly kind: ToolKind
  readonly names: readonly string[]
  /** Only when an argument has this value (str_replace_editor's command:"view"). */
  readonly when?: { readonly arg: string; readonly equals: string }
  /** Argument names that hold the path, first present wins. */
  readonly path?: readonly string[]
  readonly range?: readonly RangeRule[]
}

/**
 * A wrapper an agent puts around the lines of a read: the named group `body` holds the lines;
 * `start`, `end` and `total` (when present) state the range shown and the file's length.
 */
export interface ReadEnvelope {
  readonly pattern: RegExp
  /** What the wrapper says the result is, when it is not a file's lines (a directory). */
  readonly kind?: 'list'
}

export interface Profile {
  readonly name: string
  readonly tools: readonly ToolRule[]
  /** A read result starting like this is a failure, not content. */
  readonly failures: readonly RegExp[]
  readonly envelopes: readonly ReadEnvelope[]
  /**
   * Placeholders agents put in place of a result themselves (their own "unchanged" notices,
   * cleared old results): never a read, never a listing, never a stub target.
   */
  readonly agentStubs: readonly RegExp[]
}

export function defineProfile(profile: Profile): Profile {
  for (const tool of profile.tools) {
    if ((tool.kind === 'read' || tool.kind === 'write') && !tool.path?.length) {
      throw new Error(`profile ${profile.name}: a read tool needs path arguments (${tool.names.join(', ')})`)
    }
  }
  return Object.freeze(profile)
}
