/** The `context` section of loop.json: every number and text of the spec, validated at start-up. */
export interface ContextRules {
  readonly ids: { readonly digits: number }
  readonly sha_digits: number
  readonly cap: CapLimits
  readonly window: { readonly lines: number }
  readonly dedupe: { readonly by_result: readonly string[] }
  readonly compaction: { readonly rows: number }
  readonly texts: Readonly<Record<TextName, string>>
}

export interface CapLimits {
  readonly max_lines: number
  readonly max_chars: number
  readonly head_lines: number
  readonly head_chars: number
  readonly tail_lines: number
  readonly tail_chars: number
}

export const TEXT_NAMES = [
  'id_bracket',
  'read_bracket',
  'read_bracket_empty',
  'read_bracket_blind',
  'read_bracket_blind_total',
  'stub',
  'same_result',
  'elided',
  'cut',
  'recall_bracket',
  'recall_bracket_empty',
  'recall_past_end',
  'recall_unknown',
  'edit_bracket',
  'edit_file_bracket',
  'created',
  'deleted_bracket',
  'deleted_file_bracket',
  'table_heading',
  'table_sentence',
  'table_header',
  'table_row',
  'table_lines',
  'table_lines_blind',
  'table_lines_empty',
] as const

export type TextName = (typeof TEXT_NAMES)[number]

/** What the workspace knows of a file at the moment its result is inserted. */
export interface FileFacts {
  /** Length in lines. */
  readonly lines: number
  /** Full SHA-256 of the content, lowercase hex. Only it decides whether a file is unchanged. */
  readonly sha256: string
}

/** A read, normalised: lines are 1-based and inclusive. */
export interface ReadCall {
  readonly kind: 'read'
  /** The path as the call gave it (shown in brackets). */
  readonly path: string
  /** The absolute, resolved path (identity). */
  readonly absPath: string
  /** First and last line the result shows (end < start for an empty range). */
  readonly start: number
  readonly end: number
  /** Workspace mode: the file as it is, when the lines shown match it. Absent: blind mode. */
  readonly file?: FileFacts
  /** Blind mode: the file's length, when the result itself states it. */
  readonly total?: number
  /** Blind mode: the text of each line shown, to compare with an earlier read. */
  readonly shown?: readonly string[]
  /**
   * The result also shows lines past `end` that it does not place (the tail after an agent's cut
   * middle): a target for the lines start-end, but never itself a stub, which would hide them.
   */
  readonly more?: true
}

/** One file's change: `before` null = it did not exist; `after` null = it was deleted. */
export interface FileChange {
  readonly path: string
  readonly absPath: string
  readonly before: string | null
  readonly after: string | null
  /** Full SHA-256 of `after`. */
  readonly sha256?: string
}

export interface EditCall extends FileChange {
  readonly kind: 'edit'
  /** A note the tool added after its own answer (kept after the diff). */
  readonly note?: string
}

export interface PatchCall {
  readonly kind: 'patch'
  readonly files: readonly FileChange[]
  readonly note?: string
}

/** A listing or search (dedupe.by_result): the same arguments and text twice is a stub. */
export interface ListingCall {
  readonly kind: 'listing'
  /** list, glob, grep or search: deduplicated when dedupe.by_result names it. */
  readonly group: string
  /** The tool's name, part of what makes two calls the same. */
  readonly name: string
  readonly args: unknown
  /**
   * The output to compare, when the result wraps it in what changes every run (a shell wrapper's
   * chunk id and wall time): two results are the same when their outputs are.
   */
  readonly output?: string
  /** As OtherCall's: the output inside a JSON answer, capped there. */
  readonly wrapped?: Wrapped
}

/**
 * The tool's output inside an answer that wraps it as a JSON string (Cline 4): `before` and
 * `after` are the answer around the string's content. A long output is capped inside, so the
 * answer stays JSON and recall shows the output's own lines.
 */
export interface Wrapped {
  readonly before: string
  readonly output: string
  readonly after: string
}

export interface OtherCall {
  readonly kind: 'other'
  /** Files the call changed (an edit the engine cannot diff): reads of them are no targets. */
  readonly touches?: readonly string[]
  /** The output inside a JSON answer (Cline 4), capped there. */
  readonly wrapped?: Wrapped
}

/** One file of a call that read several, in the answer's order. */
export interface ReadsFile {
  /** The file's answer as the tool gave it: its lines, or its error. */
  readonly output: string
  /** When the answer shows lines the engine can place: the read they are. */
  readonly read?: ReadCall
}

/**
 * A call that read several files and answered each in a JSON string of its own (Cline 4's
 * read_files): the answer is pieces[0], file 0's output, pieces[1], …, pieces[n], each output
 * written as the inside of a JSON string. Each read gets its bracket (under the result's id) or
 * its stub inside its own string, so the answer stays JSON.
 */
export interface ReadsCall {
  readonly kind: 'reads'
  readonly files: readonly ReadsFile[]
  readonly pieces: readonly string[]
}

export type SemanticCall = ReadCall | ReadsCall | EditCall | PatchCall | ListingCall | OtherCall
