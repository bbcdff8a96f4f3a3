import { readBracket } from './brackets.js'
import { capText } from './cap.js'
import type { TableRead } from './compaction-table.js'
import {
  hashLines,
  MAX_HASHED_LINES,
  sha256Hex,
  sortedKeyJson,
  type DedupeTable,
  type Entry,
  type ReadEntry,
} from './dedupe-table.js'
import { renderEdit, renderPatch } from './edit-diff.js'
import { formatId } from './ids.js'
import { fill } from './text.js'
import type {
  ContextRules,
  ListingCall,
  ReadCall,
  ReadsCall,
  SemanticCall,
  Wrapped,
} from './types.js'

export interface RenderInput {
  /** The result's number in the session (its id, unformatted). */
  readonly number: number
  readonly call: SemanticCall
  /** The tool's own result text, in full. */
  readonly text: string
}

/** A full rendering: what the model sees, and what it adds to the request's dedupe table. */
export interface FullRendering {
  readonly text: string
  readonly entry?: Entry | undefined
  /** A full read, for the table after a summary. */
  readonly read?: TableRead | undefined
  /** The full reads of a call that read several files (its read is then absent). */
  readonly reads?: readonly TableRead[] | undefined
}

export interface Rendering extends FullRendering {
  /**
   * Set when `text` is a stub: the id it names, and the full rendering for when it is gone. A
   * call that read several files may stub several: `targets` are then all the ids they name.
   */
  readonly stub?:
    | {
        readonly target: string
        readonly targets?: readonly string[] | undefined
        readonly full: FullRendering
      }
    | undefined
  /** What recall shows of this result, when it is not the tool's own text: an edit's whole diff. */
  readonly stored?: string | undefined
}

/**
 * Renders a newly inserted result (spec §1–§6) against the dedupe table of the request being
 * built. The caller adds `entry` to the table when it sends this rendering.
 */
export function renderResult(
  input: RenderInput,
  table: DedupeTable,
  rules: ContextRules,
): Rendering {
  const id = formatId(input.number, rules.ids.digits)
  const { call, text } = input
  switch (call.kind) {
    case 'read':
      return renderRead(call, id, text, table, rules)
    case 'reads':
      return renderReads(call, id, table, rules)
    case 'listing':
      if (rules.dedupe.by_result.includes(call.group))
        return renderListing(call, id, text, table, rules)
      return { text: withId(id, capText(text, id, rules), rules) }
    case 'edit':
      return {
        text: renderEdit(call, id, rules),
        stored: renderEdit(call, id, uncapped(rules)),
        entry: touch(id, [call.absPath]),
      }
    case 'patch':
      return {
        text: renderPatch(call, id, rules),
        stored: renderPatch(call, id, uncapped(rules)),
        entry: touch(
          id,
          call.files.map((file) => file.absPath),
        ),
      }
    case 'other': {
      const entry = call.touches?.length ? touch(id, call.touches) : undefined
      return { ...capped(id, text, call.wrapped, rules), entry }
    }
  }
}

function renderRead(
  read: ReadCall,
  id: string,
  text: string,
  table: DedupeTable,
  rules: ContextRules,
): Rendering {
  const bracket = readBracket(read, id, rules)
  const empty = read.end < read.start || read.file?.lines === 0
  const full: FullRendering = {
    // Reads are not capped: the agent's own window already bounds them.
    text: text === '' ? bracket : bracket + '\n' + text,
    entry: empty ? undefined : readEntry(read, id),
    read: {
      id,
      path: read.path,
      absPath: read.absPath,
      start: read.start,
      end: read.end,
      total: read.file?.lines ?? read.total,
      sha256: read.file?.sha256,
    },
  }
  // A read that shows more than its lines (a tail after a cut) is never a stub: it would hide them.
  const earlier = empty || read.more ? undefined : table.findRead(read)
  if (!earlier) return full
  const sentence = fill(rules.texts.stub, {
    target: earlier.id,
    start: earlier.start,
    end: earlier.end,
  })
  return { text: bracket + ' ' + sentence, stub: { target: earlier.id, full } }
}

/**
 * A call that read several files (Cline 4's read_files): the id first, then the answer with each
 * read's bracket, or its stub, inside that file's own string. A stub names a read of an earlier
 * result or of an earlier file of this one; its full form shows every file.
 */
function renderReads(
  call: ReadsCall,
  id: string,
  table: DedupeTable,
  rules: ContextRules,
): Rendering {
  // Each file sees the table as it is after the files before it.
  const own = table.clone()
  const full: string[] = []
  const shown: string[] = []
  const reads: TableRead[] = []
  const fullReads: TableRead[] = []
  const entries: Entry[] = []
  const fullEntries: Entry[] = []
  const targets: string[] = []
  for (const file of call.files) {
    if (!file.read) {
      full.push(file.output)
      shown.push(file.output)
      continue
    }
    const rendering = renderRead(file.read, id, file.output, own, rules)
    const whole = rendering.stub?.full ?? rendering
    full.push(whole.text)
    if (whole.read) fullReads.push(whole.read)
    if (whole.entry) fullEntries.push(whole.entry)
    shown.push(rendering.text)
    if (rendering.stub) {
      targets.push(rendering.stub.target)
      continue
    }
    if (rendering.read) reads.push(rendering.read)
    if (rendering.entry) {
      entries.push(rendering.entry)
      own.add(rendering.entry)
    }
  }
  const answer = (outputs: readonly string[]) =>
    withId(
      id,
      call.pieces.reduce(
        (text, piece, i) => (i === 0 ? piece : text + insideJsonString(outputs[i - 1]!) + piece),
        '',
      ),
      rules,
    )
  const whole: FullRendering = {
    text: answer(full),
    entry: readsEntry(id, fullEntries),
    reads: fullReads,
  }
  if (targets.length === 0) return whole
  // The stub of an earlier file of this same result names what this result shows: not a target.
  const outside = [...new Set(targets)].filter((target) => target !== id)
  return {
    text: answer(shown),
    entry: readsEntry(id, entries),
    reads,
    ...(outside.length > 0 ? { stub: { target: outside[0]!, targets: outside, full: whole } } : {}),
  }
}

function readsEntry(id: string, reads: readonly Entry[]): Entry | undefined {
  const only = reads.filter((entry): entry is ReadEntry => entry.kind === 'read')
  return only.length > 0 ? { kind: 'reads', id, reads: only } : undefined
}

function readEntry(read: ReadCall, id: string): Entry | undefined {
  const base = {
    kind: 'read' as const,
    id,
    absPath: read.absPath,
    start: read.start,
    end: read.end,
  }
  if (read.file) return { ...base, sha256: read.file.sha256 }
  // Blind: only the lines themselves can show that a later read is unchanged.
  const count = read.end - read.start + 1
  if (read.shown && read.shown.length === count && count <= MAX_HASHED_LINES) {
    return { ...base, lineHashes: hashLines(read.shown) }
  }
  return undefined
}

function renderListing(
  call: ListingCall,
  id: string,
  text: string,
  table: DedupeTable,
  rules: ContextRules,
): Rendering {
  const key = call.name + '\u0000' + sortedKeyJson(call.args)
  const textSha256 = sha256Hex(call.output ?? text)
  const shown = capped(id, text, call.wrapped, rules)
  const full: FullRendering = {
    text: shown.text,
    entry: { kind: 'listing', id, key, textSha256 },
  }
  const earlier = table.findListing(key, textSha256)
  if (!earlier) return { ...full, ...(shown.stored === undefined ? {} : { stored: shown.stored }) }
  const sentence = fill(rules.texts.same_result, { target: earlier.id })
  return {
    text: fill(rules.texts.id_bracket, { id }) + ' ' + sentence,
    stub: { target: earlier.id, full },
  }
}

/**
 * A result with its id, capped (spec §3). An output inside a JSON answer is capped inside its
 * string, so the answer stays JSON; recall then shows the output itself (`stored`).
 */
function capped(
  id: string,
  text: string,
  wrapped: Wrapped | undefined,
  rules: ContextRules,
): { text: string; stored?: string } {
  const inner = wrapped && capText(wrapped.output, id, rules)
  if (!wrapped || inner === undefined || inner === wrapped.output)
    return { text: withId(id, capText(text, id, rules), rules) }
  const shown = wrapped.before + insideJsonString(inner) + wrapped.after
  return { text: withId(id, shown, rules), stored: wrapped.output }
}

/** A text as the inside of a JSON string (escaped, without its quotes). */
function insideJsonString(text: string): string {
  return JSON.stringify(text).slice(1, -1)
}

/** The rules with no cap: the full answer is what is stored, the capped one what is shown. */
function uncapped(rules: ContextRules): ContextRules {
  const none = Number.POSITIVE_INFINITY
  return { ...rules, cap: { ...rules.cap, max_lines: none, max_chars: none } }
}

function touch(id: string, absPaths: readonly string[]): Entry {
  return { kind: 'touch', id, absPaths }
}

function withId(id: string, text: string, rules: ContextRules): string {
  return fill(rules.texts.id_bracket, { id }) + '\n' + text
}

/**
 * A result the client rewrote itself (pruned to a placeholder): its text, under its own id. It
 * shows nothing a stub could point at, so it adds nothing to the dedupe table.
 * @example renderRewritten(3, '[Old tool result content cleared]', rules) // '[#0003]\n[Old tool result content cleared]'
 */
export function renderRewritten(number: number, text: string, rules: ContextRules): string {
  return withId(formatId(number, rules.ids.digits), text, rules)
}
