/**
 * Agent tool profiles are data: which tool names mean a read, an edit, a listing or a search,
 * which arguments name the file, the lines, the change; how results are wrapped; which answers
 * mean success. Profiles of all agents are merged into one table (see profiles/index.ts): their
 * tool names and wrappers rarely collide, and where names do collide the arguments tell them apart.
 */
export type ToolKind =
  'read' | 'edit' | 'write' | 'patch' | 'list' | 'glob' | 'grep' | 'search' | 'shell'

/** How a read's lines are asked for; normalised to 1-based inclusive by classify. */
export type RangeRule =
  /** offset + line count; base 0 or 1, or taken from the tool's schema ("0-based" in its description). */
  | { readonly offset: string; readonly limit: string; readonly base: 0 | 1 | 'schema' }
  /** first and last line, 1-based inclusive. */
  | { readonly start: string; readonly end: string }
  /** [first, last] in one argument; -1 = end of file. */
  | { readonly pair: string }

/**
 * The change an edit asks for: old/new string arguments (`list` names an array of such edits, a
 * multi-edit), or one argument of SEARCH/REPLACE blocks (Cline's replace_in_file, Roo's apply_diff).
 */
export type EditArgs =
  | { readonly old: string; readonly new: string; readonly all?: string; readonly list?: string }
  | { readonly blocks: string }

export interface ToolRule {
  readonly kind: ToolKind
  readonly names: readonly string[]
  /** Only when an argument has this value (str_replace_editor's command:"view"). */
  readonly when?: { readonly arg: string; readonly equals: readonly string[] }
  /** Argument names that hold the path, first present wins; the rule needs one. */
  readonly path?: readonly string[]
  readonly range?: readonly RangeRule[]
  /** edit: the old/new strings (one of these shapes must be present). */
  readonly edit?: readonly EditArgs[]
  /** write: the argument with the whole new content. */
  readonly content?: readonly string[]
  /** patch: the argument with the patch text (apply_patch grammar). */
  readonly patch?: readonly string[]
  /** shell: the argument with the command (a string, or argv as an array). */
  readonly command?: readonly string[]
}

/**
 * A wrapper an agent puts around the lines of a read: the named group `body` holds the lines;
 * `start`, `end` and `total` (or `of`) state the range shown and the file's length.
 */
export interface ReadEnvelope {
  readonly pattern: RegExp
  /** What the wrapper says the result is, when it is not a file's lines (a directory). */
  readonly kind?: 'list'
}

/** `any` spots the wrapper; `success` (group `body`) matches only a run that succeeded. */
export interface ShellEnvelope {
  readonly any: RegExp
  readonly success: RegExp
}

/** An answer that means an edit, write or patch succeeded; group `note` is text to keep after the diff. */
export interface SuccessRule {
  readonly pattern: RegExp
  /** The answer says the file did not exist before. */
  readonly created?: boolean
}

/**
 * How an agent's compaction shows on the wire: a message of this role whose text matches; the
 * summary is that message, or the one after it (opencode), or the one before it (Goose).
 */
export interface CompactionMarker {
  readonly role: 'user' | 'assistant' | 'system' | 'tool'
  readonly pattern: RegExp
  readonly summary?: 'self' | 'next' | 'previous'
}

export interface Profile {
  readonly name: string
  readonly tools: readonly ToolRule[]
  /** A read result starting like this is a failure, not content. */
  readonly failures: readonly RegExp[]
  readonly envelopes: readonly ReadEnvelope[]
  /** Wrappers around a shell command's output, to read `cat`/`sed -n` output. */
  readonly shellEnvelopes: readonly ShellEnvelope[]
  readonly success: readonly SuccessRule[]
  /**
   * Placeholders agents put in place of a result themselves (their own "unchanged" notices,
   * cleared old results): never a read, never a listing, never a stub target.
   */
  readonly agentStubs: readonly RegExp[]
  readonly compaction: readonly CompactionMarker[]
}

type PartialProfile = Pick<Profile, 'name' | 'tools'> & Partial<Omit<Profile, 'name' | 'tools'>>

export function defineProfile(profile: PartialProfile): Profile {
  for (const tool of profile.tools) {
    const needs = {
      read: tool.path,
      edit: tool.path && tool.edit,
      write: tool.path,
      patch: tool.patch,
      shell: tool.command,
    }
    if (tool.kind in needs && !needs[tool.kind as keyof typeof needs]?.length) {
      throw new Error(
        `profile ${profile.name}: ${tool.kind} tool ${tool.names.join(', ')} lacks its arguments`,
      )
    }
  }
  return Object.freeze({
    failures: [],
    envelopes: [],
    shellEnvelopes: [],
    success: [],
    agentStubs: [],
    compaction: [],
    ...profile,
  })
}

/** One table from many profiles, in the order given: the first rule that fits wins. */
export function mergeProfiles(name: string, profiles: readonly Profile[]): Profile {
  const all = <K extends keyof Profile>(key: K) =>
    profiles.flatMap((p) => p[key] as unknown as never[])
  return Object.freeze({
    name,
    tools: all('tools'),
    failures: all('failures'),
    envelopes: all('envelopes'),
    shellEnvelopes: all('shellEnvelopes'),
    success: all('success'),
    agentStubs: all('agentStubs'),
    compaction: all('compaction'),
  })
}
