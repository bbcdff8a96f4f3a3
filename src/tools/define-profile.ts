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
 * multi-edit), one argument of SEARCH/REPLACE blocks (Cline's replace_in_file, Roo's apply_diff),
 * or text inserted at a line: `after` line N (0 = the top: OpenHands, Goose) or `before` the
 * 1-based line N (Cline 4's editor, where N = last line + 1 appends).
 */
export type EditArgs =
  | { readonly old: string; readonly new: string; readonly all?: string; readonly list?: string }
  | { readonly blocks: string }
  | { readonly insert: string; readonly line: string; readonly base: 'after' | 'before' }

/**
 * A result that is JSON (Cline 4): one object, or with `list` an array of one object per item,
 * whose `text` field is the tool's answer and whose `ok` field is false when it failed.
 */
export interface JsonResult {
  readonly text: string
  readonly ok: string
  readonly list?: boolean
  /** Other agents answer the same call in plain text: a result not of this shape is that text. */
  readonly maybe?: boolean
}

export interface ToolRule {
  readonly kind: ToolKind
  readonly names: readonly string[]
  /** Only when an argument has this value (str_replace_editor's command:"view"). */
  readonly when?: { readonly arg: string; readonly equals: readonly string[] }
  /** Argument names that hold the path, first present wins; the rule needs one. */
  readonly path?: readonly string[]
  /**
   * read: the argument with a list of files, each an object with the path and range arguments
   * (Cline 4's read_files `files`). A list of one file is a read; of several, "reads": each
   * file a read of its own, answered in its own entry of the JSON answer.
   */
  readonly item?: string
  readonly range?: readonly RangeRule[]
  /**
   * read: the tool does not number the empty fragment after the file's final newline (Cline 4),
   * so a final empty numbered line is a line of the file, not to be dropped.
   */
  readonly realFinalEmpty?: boolean
  /** edit: the old/new strings (one of these shapes must be present). */
  readonly edit?: readonly EditArgs[]
  /**
   * write: the argument with the whole new content; edit: the content when no edit shape is
   * present (Cline 4's editor without old_text creates the file).
   */
  readonly content?: readonly string[]
  /** patch: the argument with the patch text (apply_patch grammar). */
  readonly patch?: readonly string[]
  /** shell: the argument with the command (a string, or argv as an array). */
  readonly command?: readonly string[]
  /**
   * shell: the arguments that name the directory the command runs in, first present wins
   * (opencode's `workdir`, Qwen Code's `directory`): a read's relative path resolves against it.
   */
  readonly dir?: readonly string[]
  /** shell: the argument with a list of commands (Cline 4's run_commands); only one is read. */
  readonly commands?: readonly string[]
  /** The result is JSON around the tool's answer (Cline 4). */
  readonly json?: JsonResult
  /**
   * The argument `arg` is Python code that is one call of `call` with literal arguments
   * (OpenHands V0's `execute_ipython_cell`: `open_file('/workspace/a.py')`): the rule reads that
   * call's arguments, positional ones named by `params`, instead of the tool's own.
   */
  readonly code?: {
    readonly arg: string
    readonly call: string
    readonly params: readonly string[]
  }
}

/**
 * A wrapper an agent puts around the lines of a read: the named group `body` holds the lines;
 * `start`, `end` and `total` (or `of`) state the range shown and the file's length.
 */
export interface ReadEnvelope {
  readonly pattern: RegExp
  /**
   * What the wrapper says the result is, when it is not lines of a file: a directory (`list`),
   * a file that is empty (`empty`: no lines, length 0), or the tool's own view of a file that is
   * not its lines (`other`: Claude Code's notebook cells), shown as it came.
   */
  readonly kind?: 'list' | 'empty' | 'other'
  /**
   * The body was cut at a size limit (OpenHands' `<response clipped>`, Cline 4's middle cut):
   * its last line is partial unless the body ends with a newline, and it is never the whole file.
   * `middle`: the end of the text is shown after the cut (Cline 4), lines the body does not place.
   */
  readonly cut?: boolean | 'middle'
  /**
   * The wrapper says the file goes on past the lines shown (Qwen Code writes its `Showing lines`
   * header only then): the lines are whole, but never the whole file.
   */
  readonly partial?: boolean
  /**
   * A line the agent cut at its line-length limit ends like this (opencode's `... (line truncated
   * to 2000 chars)`): that line is not the file's, and the result is never the whole file.
   */
  readonly lineCut?: RegExp
}

/**
 * `any` spots the wrapper; `success` (group `body`) matches only a run that succeeded, whole.
 * Without `success` (or `json`) the wrapper only marks a run whose output is not a file's lines
 * (failed, or cut).
 */
export interface ShellEnvelope {
  readonly any: RegExp
  readonly success?: RegExp
  /**
   * The wrapper is a JSON object (Codex, mini-swe-agent's `mini`): `output` and `exit` name its
   * fields (dotted paths). The output is the run's when it is a string and the exit code is 0.
   */
  readonly json?: { readonly output: string; readonly exit: string }
  /**
   * The output inside starts like this when the agent cut it (Codex's `Warning: truncated output
   * …`, `Total output lines: N` before a head and tail around `…N chars truncated…`): such a run
   * is not whole, never a read.
   */
  readonly cut?: RegExp
}

/**
 * An answer that means an edit, write or patch succeeded. Group `note` is text to keep after the
 * diff; group `after` is the file's whole content after the change, when the answer states it
 * (Cline's `<final_file_content>`: the truth even when a formatter or the user changed it).
 */
export interface SuccessRule {
  readonly pattern: RegExp
  /** The answer says the file did not exist before. */
  readonly created?: boolean
  /** Group `note` is the inside of a JSON string (Roo's `problems`): decoded before it is kept. */
  readonly noteJson?: boolean
  /**
   * The change succeeded but is not the call's alone (the user edited it, a partial multi-edit):
   * the file is touched, the change is not derived.
   */
  readonly opaque?: boolean
  /**
   * The tool finds an edit's old text loosely when it is not there as given (the Continue CLI:
   * trimmed, case-insensitive, whitespace-ignored, the new text re-indented): the change is known
   * only from the file as the model saw it with the edit replayed exactly on it, never undone
   * from the file after.
   */
  readonly inexact?: boolean
  /**
   * The answer says the file had changed since the model last saw it (a formatter, a shell
   * command): the change is known only from the file itself (a workspace), never from the view.
   */
  readonly staleView?: boolean
}

/**
 * How an agent's compaction shows on the wire: a message of this role whose text matches; the
 * summary is that message, or the one after it (opencode), or the one before it (Goose). With
 * `first`, only the first message after the system prompt counts: an agent whose summary has no
 * fixed words of its own (the Continue CLI) is known by where it puts it. With `offered`, only
 * in a request that offers all these tools: the agents' markers are one table, and a rule that
 * loose must stay its own agent's.
 */
export interface CompactionMarker {
  /** `compaction`: the Responses API's opaque summary item (a server-side compaction). */
  readonly role: 'user' | 'assistant' | 'system' | 'tool' | 'compaction'
  readonly pattern: RegExp
  readonly summary?: 'self' | 'next' | 'previous'
  readonly first?: boolean
  readonly offered?: readonly string[]
}

/**
 * A block an agent appends after the output of any of its tools (Claude Code's
 * `<system-reminder>…</system-reminder>`): the output is classified, compared, stubbed and capped
 * without it, and the blocks are kept, byte for byte, after the rendering.
 */
export interface Trailer {
  readonly open: string
  readonly close: string
}

export interface Profile {
  readonly name: string
  readonly tools: readonly ToolRule[]
  readonly trailers: readonly Trailer[]
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
  /**
   * The agent's request for a summary of the conversation (its compaction), known by the text
   * of its last user message when it still offers its tools: `--elide` makes no batch there (it
   * would take from the summary results the model saw whole the request before).
   */
  readonly summarising: readonly RegExp[]
}

type PartialProfile = Pick<Profile, 'name' | 'tools'> & Partial<Omit<Profile, 'name' | 'tools'>>

export function defineProfile(profile: PartialProfile): Profile {
  for (const tool of profile.tools) {
    const needs = {
      read: tool.path,
      edit: tool.path && tool.edit,
      write: tool.path,
      patch: tool.patch,
      shell: [...(tool.command ?? []), ...(tool.commands ?? [])],
    }
    if (tool.kind in needs && !needs[tool.kind as keyof typeof needs]?.length) {
      throw new Error(
        `profile ${profile.name}: ${tool.kind} tool ${tool.names.join(', ')} lacks its arguments`,
      )
    }
  }
  return Object.freeze({
    trailers: [],
    failures: [],
    envelopes: [],
    shellEnvelopes: [],
    success: [],
    agentStubs: [],
    compaction: [],
    summarising: [],
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
    trailers: all('trailers'),
    failures: all('failures'),
    envelopes: all('envelopes'),
    shellEnvelopes: all('shellEnvelopes'),
    success: all('success'),
    agentStubs: all('agentStubs'),
    compaction: all('compaction'),
    summarising: all('summarising'),
  })
}
