import { posix } from 'node:path'
import { sha256Hex, type FileChange, type ReadsFile, type SemanticCall } from '../context/index.js'
import {
  shellOutput,
  shownLines,
  type Classified,
  type JsonResult,
  type PatchFile,
  type Profile,
} from '../tools/index.js'
import type { FileSnapshot, Workspace } from '../workspace/index.js'
import { applyHunks, applyReplacements, undoHunks, undoReplacements } from './edits.js'

/** A file's content as a result shows it to the model: the base of a later edit's diff. */
export interface FileView {
  readonly absPath: string
  readonly content: string
  readonly sha256: string
}

/** The content of each file as the request shows it up to the result being rendered. */
export interface FileViews {
  content(absPath: string): Promise<string | undefined>
}

export interface Facts {
  readonly call: SemanticCall
  /** What the result shows the file to be now, when it shows all of it. */
  readonly views?: readonly FileView[]
  /**
   * The call is a known agent tool's, but its answer is not as the profile expects (what was
   * expected): the agent changed its output, and the result goes as it came.
   */
  readonly unrecognised?: string
}

// Words with which agents say a change failed (in its first 300 characters): a failure, not drift.
const FAILED =
  /<tool_use_error>|\b(?:error|errors|not found|no match|does not exist|doesn't exist|not been read|must read|denied|refused|not allowed|failed|cannot|can't|could not|unable|invalid)\b/i

// A shell read that failed prints the program's complaint, not the file; so does a shell whose
// `cd DIR;` failed before the read ran elsewhere (stderr is often merged into the output).
const SHELL_FAILURE = /^(?:cat|sed|head|nl|tail): |^(?:\S*\/)?(?:ba|da|z)?sh: /

const LISTINGS: ReadonlySet<string> = new Set(['list', 'glob', 'grep', 'search'])

/**
 * Turns a classified call and its result into the engine's input, with the file facts of this
 * moment. Workspace mode: files are hashed, and a read's facts are used only when the lines it
 * shows are the file's lines (else it changed since, and the read is blind). Blind mode: only
 * what the result shows, and the file views earlier results of the request established.
 */
export async function resultFacts(
  classified: Classified,
  fullText: string,
  profile: Profile,
  workspace: Workspace | undefined,
  views: FileViews,
): Promise<Facts> {
  if (classified.kind === 'reads') return readsFacts(classified, fullText, profile, workspace)
  // Cline 4 answers in JSON: the tool's own answer is inside, and a failure says so there.
  const json = 'json' in classified ? classified.json : undefined
  const answer = json ? jsonAnswer(fullText, json) : fullText
  // A listing or search that failed is still one: the same failure twice is the same result.
  const text = answer ?? (LISTINGS.has(classified.kind) ? fullText : undefined)
  if (text === undefined) return { call: { kind: 'other' } }
  // Where the tool's own answer stands in the JSON: found only for the kinds capped there.
  const wrap = () => (json && answer !== undefined ? wrappedOutput(fullText, answer) : undefined)
  // An agent's own placeholder is shown as it is, with an id: never a read, never a target.
  if (agentStub(text, profile)) return { call: { kind: 'other' } }
  switch (classified.kind) {
    case 'other': {
      const wrapped = wrap()
      return { call: { kind: 'other', ...(wrapped ? { wrapped } : {}) } }
    }
    case 'read':
      return readFacts(classified, text, profile, workspace)
    case 'patch': {
      // A patch the shell ran, or the patch tool that answers as a run does (Codex 0.171's own
      // apply_patch: `Exit code: 0`, `Wall time`, `Output:`): its answer is inside the shell's
      // wrapper; a failed run is no drift.
      const answer = shellOutput(text, profile.shellEnvelopes)
      if (answer === undefined) return { call: { kind: 'other' } }
      return changeFacts(classified, answer, profile, workspace, views)
    }
    case 'edit':
    case 'write':
      return changeFacts(classified, text, profile, workspace, views)
    default: {
      // A shell's listing or search is the same as an earlier one when its output is.
      const output =
        classified.name === 'shell' ? shellOutput(text, profile.shellEnvelopes, true) : undefined
      const wrapped = wrap()
      return {
        call: {
          kind: 'listing',
          group: classified.kind,
          name: classified.name,
          args: classified.args,
          ...(output !== undefined && output !== text ? { output } : {}),
          ...(wrapped ? { wrapped } : {}),
        },
      }
    }
  }
}

/**
 * A call that read several files, answered in one JSON list (Cline 4's read_files): each file's
 * answer is read as a read of its own; one that failed, or that is no read, stays as it came.
 */
async function readsFacts(
  classified: Extract<Classified, { kind: 'reads' }>,
  text: string,
  profile: Profile,
  workspace: Workspace | undefined,
): Promise<Facts> {
  const answers = classified.json && jsonAnswers(text, classified.json, classified.files.length)
  if (!answers) return { call: { kind: 'other' } }
  const files: ReadsFile[] = []
  const views: FileView[] = []
  let drift: string | undefined
  for (const [i, answer] of answers.outputs.entries()) {
    const output = answer.text
    if (!answer.ok || agentStub(output, profile)) {
      files.push({ output })
      continue
    }
    const facts = await readFacts(classified.files[i]!, output, profile, workspace)
    drift ??= facts.unrecognised
    if (facts.call.kind === 'read') {
      files.push({ output, read: facts.call })
      views.push(...(facts.views ?? []))
    } else files.push({ output })
  }
  const unrecognisedFile = drift === undefined ? {} : { unrecognised: drift }
  if (!files.some((file) => file.read)) return { call: { kind: 'other' }, ...unrecognisedFile }
  return {
    call: { kind: 'reads', files, pieces: answers.pieces },
    views,
    ...unrecognisedFile,
  }
}

/** The last line of a text with something on it. */
function lastLine(text: string): string {
  const end = text.trimEnd()
  return end.slice(end.lastIndexOf('\n') + 1)
}

async function readFacts(
  classified: Extract<Classified, { kind: 'read' }>,
  text: string,
  profile: Profile,
  workspace: Workspace | undefined,
): Promise<Facts> {
  const body = classified.shell ? shellOutput(text, profile.shellEnvelopes) : text
  if (body === undefined || SHELL_FAILURE.test(body)) return { call: { kind: 'other' } }
  // The complaint may come after the output too: stderr after stdout (Qwen Code, sometimes
  // opencode and Kilo) of `cd DIR; cat f` whose cd failed, and the read ran elsewhere.
  if (classified.shell && SHELL_FAILURE.test(lastLine(body))) return { call: { kind: 'other' } }
  if (profile.failures.some((failure) => failure.test(body.trimStart())))
    return { call: { kind: 'other' } }
  // A shell's `cat -n` never numbers the empty string after a final newline: its last line is real.
  const shown = shownLines(body, classified.shell ? [] : profile.envelopes, {
    realFinalEmpty: classified.shell === true || classified.realFinalEmpty === true,
    ...(classified.shell ? { numbered: classified.numbered === true } : {}),
  })
  // The tool's own view of the file, not its lines (a notebook's cells): no bracket, no stub.
  if (shown.kind === 'other') return { call: { kind: 'other' } }
  const where = located(classified)
  if (shown.kind === 'list') {
    return { call: { kind: 'listing', group: 'list', name: 'read', args: { path: where } } }
  }
  // Numbered, but not lines it can place: a tool's own read has changed its numbering.
  if (shown.garbled) return unrecognised(classified, 'lines numbered in one run')
  const snapshot = await workspace?.read(where)
  // Nothing is there: whatever the agent printed, it is no file's lines (a tool's own error).
  if (!snapshot && (await workspace?.missing?.(where))) return { call: { kind: 'other' } }
  const fileLines = snapshot ? linesOf(snapshot.content) : undefined
  // Where the lines start, as the call or the lines say; a tail's, from the file's length.
  const placed = shown.start ?? placedStart(classified, shown.lines.length)
  const start = placed ?? (fileLines && fileLines.length - shown.lines.length + 1)
  if (start === undefined) return unrecognised(classified, 'lines it can place')
  const end = start + shown.lines.length - 1
  if (snapshot && fileLines) {
    // Nothing shown matches only an empty file that the result says is empty.
    const matches =
      shown.lines.length === 0
        ? shown.total === 0 && fileLines.length === 0
        : end <= fileLines.length &&
          shown.lines.every((line, i) => sameLine(line, fileLines[start - 1 + i]))
    if (matches) {
      return {
        call: {
          kind: 'read',
          path: classified.path,
          absPath: snapshot.absPath,
          start: snapshot.lines === 0 ? 1 : start,
          end: snapshot.lines === 0 ? 0 : end,
          file: { lines: snapshot.lines, sha256: snapshot.sha256 },
          ...(shown.more ? { more: true as const } : {}),
        },
        views: [viewOf(snapshot)],
      }
    }
    // A command's output that is not the file's lines (a notice or a cut the agent put in, an
    // error mixed in) is no read: a shell read is only guessed, and here the file says it is not.
    if (classified.shell) return { call: { kind: 'other' } }
  }
  // Nothing shown, nothing known: unless the result says the file is empty. A tail placed by a
  // file that no longer shows its lines is placed nowhere.
  if (shown.lines.length === 0 && shown.total !== 0) return { call: { kind: 'other' } }
  if (placed === undefined) return { call: { kind: 'other' } }
  const absPath = snapshot?.absPath ?? blindAbsPath(where)
  // Blind, the result shows the whole file when it says so, or when the call asked for no
  // range and got fewer lines than an agent's window (2000): nothing was cut.
  const whole =
    !snapshot &&
    !shown.cut &&
    start === 1 &&
    (shown.total !== undefined
      ? end === shown.total
      : classified.end === undefined && shown.lines.length < 2000)
  const content = shown.lines.length === 0 ? '' : shown.lines.join('\n') + '\n'
  return {
    call: {
      kind: 'read',
      path: classified.path,
      absPath,
      start,
      end,
      ...(shown.total === undefined ? {} : { total: shown.total }),
      ...(shown.more ? { more: true as const } : {}),
      // A file that changed since the tool read it is never a stub target: keep its lines unknown.
      ...(snapshot ? {} : { shown: shown.lines }),
    },
    ...(whole ? { views: [{ absPath, content, sha256: sha256Hex(content) }] } : {}),
  }
}

/**
 * An edit, write or patch that succeeded is answered with its diff: the content after is the
 * file now (workspace) or the edit applied to the file's view (blind); the content before is the
 * edit undone, or the view. What cannot be known surely stays the tool's own answer.
 */
async function changeFacts(
  classified: Extract<Classified, { kind: 'edit' | 'write' | 'patch' }>,
  text: string,
  profile: Profile,
  workspace: Workspace | undefined,
  views: FileViews,
): Promise<Facts> {
  const success = profile.success
    .map((rule) => ({ rule, match: rule.pattern.exec(text) }))
    .find((s) => s.match)
  const paths = changedPaths(classified)
  const where = changedFiles(classified)
  const snapshots = await Promise.all(where.map((path) => workspace?.read(path)))
  const absPaths = where.map((path, i) => snapshots[i]?.absPath ?? blindAbsPath(path))
  // A failed edit changed nothing: its error text stays, with its id.
  if (!success) {
    const failed =
      FAILED.test(text.slice(0, 300)) || profile.failures.some((f) => f.test(text.trimStart()))
    return failed ? { call: { kind: 'other' } } : unrecognised(classified, 'a success answer')
  }
  const fallback: Facts = { call: { kind: 'other', touches: absPaths } }
  // Changed, but not as the call alone says (the user edited it): touched, not derived.
  if (success.rule.opaque) return fallback
  const groups = success.match?.groups ?? {}
  const note = noteOf(groups.note, success.rule.noteJson === true)
  // The content after as the answer states it, for a change of one file.
  const stated = paths.length === 1 ? statedContent(groups.after) : undefined

  const changes: FileChange[] = []
  const files = classified.kind === 'patch' ? classified.files : [undefined]
  for (const [i, file] of files.entries()) {
    const path = paths[i]!
    const absPath = absPaths[i]!
    const snapshot = snapshots[i]
    const change = await fileChange(classified, file, {
      path,
      absPath,
      snapshot,
      created: success.rule.created === true,
      inexact: success.rule.inexact === true,
      staleView: success.rule.staleView === true,
      stated,
      views,
    })
    if (!change) return fallback
    changes.push(change)
  }
  const newViews = changes
    .filter((change): change is FileChange & { after: string } => change.after !== null)
    .map((change) => ({
      absPath: change.absPath,
      content: change.after,
      sha256: change.sha256 ?? sha256Hex(change.after),
    }))
  const call: SemanticCall =
    classified.kind === 'patch'
      ? { kind: 'patch', files: changes, ...(note ? { note } : {}) }
      : { kind: 'edit', ...changes[0]!, ...(note ? { note } : {}) }
  return { call, views: newViews }
}

interface ChangeContext {
  readonly path: string
  readonly absPath: string
  readonly snapshot: FileSnapshot | undefined
  /** The answer says the file is new. */
  readonly created: boolean
  /** The tool may have matched the old text loosely (SuccessRule.inexact). */
  readonly inexact: boolean
  /** The file had changed since the model's view (SuccessRule.staleView). */
  readonly staleView: boolean
  /** The file's content after the change, as the answer states it. */
  readonly stated: string | undefined
  readonly views: FileViews
}

async function fileChange(
  classified: Extract<Classified, { kind: 'edit' | 'write' | 'patch' }>,
  file: PatchFile | undefined,
  { path, absPath, snapshot, created, inexact, staleView, stated, views }: ChangeContext,
): Promise<FileChange | undefined> {
  if (staleView && !snapshot) return undefined
  const base = { path: file?.op === 'update' && file.moveTo ? file.moveTo : path, absPath }
  const view = () => views.content(absPath)
  if (file?.op === 'add') {
    // Codex's Add File writes over a file that is there: when the request showed this file, it
    // may have been there before, so "Created" is not known to be true.
    if ((await view()) !== undefined) return undefined
    return { ...base, before: null, after: snapshot?.content ?? file.content, ...shaOf(snapshot) }
  }
  if (file?.op === 'delete') return snapshot ? undefined : { ...base, before: '', after: null }
  if (classified.kind === 'write') {
    const after = snapshot?.content ?? stated ?? classified.content
    if (after === undefined) return undefined
    const before = created ? null : await view()
    return before === undefined ? undefined : { ...base, before, after, ...shaOf(snapshot) }
  }
  const redo = (content: string) =>
    classified.kind === 'edit'
      ? applyReplacements(content, classified.replacements)
      : file?.op === 'update'
        ? applyHunks(content, file.hunks)
        : undefined
  const undo = (content: string) =>
    classified.kind === 'edit'
      ? undoReplacements(content, classified.replacements)
      : file?.op === 'update'
        ? undoHunks(content, file.hunks)
        : undefined
  if (classified.kind === 'edit' && created) {
    // An edit that made the file (Crush's edit with an empty old_string): its new text is all.
    const [only, ...more] = classified.replacements
    const made =
      only && 'old' in only && only.old === '' && more.length === 0 ? only.new : undefined
    const after = snapshot?.content ?? stated ?? made
    return after === undefined ? undefined : { ...base, before: null, after, ...shaOf(snapshot) }
  }
  if (snapshot && classified.kind === 'edit' && inexact) {
    // A tool that matches loosely: only the file as the model saw it, the edit replayed on it
    // exactly, says what changed (the tool tries the exact text first). Never undone.
    const viewed = await view()
    return viewed !== undefined && redo(viewed) === snapshot.content
      ? { ...base, before: viewed, after: snapshot.content, sha256: snapshot.sha256 }
      : undefined
  }
  if (snapshot) {
    const undone = undo(snapshot.content)
    // Codex ends every file it patches with a newline: the file as shown tells whether it had one.
    // An edit undone needs no view.
    const viewed = undone === undefined || classified.kind === 'patch' ? await view() : undefined
    const before =
      undone !== undefined
        ? viewed !== undefined && viewed + '\n' === undone
          ? viewed
          : undone
        : viewed !== undefined && redo(viewed) === snapshot.content
          ? viewed
          : undefined
    return before === undefined
      ? undefined
      : { ...base, before, after: snapshot.content, sha256: snapshot.sha256 }
  }
  const viewed = await view()
  if (stated !== undefined) {
    // The answer's content is the file now, a formatter's or the user's changes included.
    const before = viewed ?? undo(stated)
    return before === undefined ? undefined : { ...base, before, after: stated }
  }
  const after = viewed === undefined ? undefined : redo(viewed)
  return viewed === undefined || after === undefined
    ? undefined
    : { ...base, before: viewed, after }
}

/** The note kept after the diff: trimmed, decoded when it is the inside of a JSON string. */
function noteOf(raw: string | undefined, json: boolean): string | undefined {
  if (raw === undefined) return undefined
  let text = raw
  if (json) {
    try {
      text = JSON.parse(`"${raw}"`) as string
    } catch {
      return undefined
    }
  }
  return text.trim() || undefined
}

/**
 * A file's whole content as an answer states it: raw, or numbered from line 1 (forks of Cline
 * number it); unknown when it is numbered in a way that does not run on.
 */
function statedContent(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined
  if (raw === '') return ''
  const shown = shownLines(raw, [], { realFinalEmpty: true })
  if (shown.garbled || (shown.start !== undefined && shown.start !== 1)) return undefined
  if (shown.start === undefined) return raw.endsWith('\n') ? raw : raw + '\n'
  return shown.lines.join('\n') + '\n'
}

/** The paths an edit, write or patch names, as the call gives them. */
export function changedPaths(
  classified: Extract<Classified, { kind: 'edit' | 'write' | 'patch' }>,
): string[] {
  return classified.kind === 'patch' ? classified.files.map(patchPath) : [classified.path]
}

/** Where the files an edit, write or patch names are: their paths, in the shell's directory. */
export function changedFiles(
  classified: Extract<Classified, { kind: 'edit' | 'write' | 'patch' }>,
): string[] {
  const dir = classified.kind === 'patch' ? classified.dir : undefined
  return changedPaths(classified).map((path) =>
    dir === undefined || posix.isAbsolute(path) ? path : posix.join(dir, path),
  )
}

function patchPath(file: PatchFile): string {
  return file.op === 'update' && file.moveTo ? file.moveTo : file.path
}

function shaOf(snapshot: FileSnapshot | undefined): { sha256?: string } {
  return snapshot ? { sha256: snapshot.sha256 } : {}
}

function viewOf(snapshot: FileSnapshot): FileView {
  return { absPath: snapshot.absPath, content: snapshot.content, sha256: snapshot.sha256 }
}

/**
 * The first line a read shows, as its call says. A tail's is known only when it shows fewer lines
 * than it asked for: then they are all the file's (`tail -n N` of a shorter file).
 */
function placedStart(
  classified: Extract<Classified, { kind: 'read' }>,
  shownCount: number,
): number | undefined {
  if (classified.tail === undefined) return classified.start
  return shownCount < classified.tail ? 1 : undefined
}

/**
 * The tool's answer inside a JSON result (Cline 4: `{query, result, success}`, or an array of
 * one such entry per item); undefined when it failed or is not that shape.
 */
function jsonAnswer(text: string, json: JsonResult): string | undefined {
  const entry = jsonEntry(text, json.list === true)
  if (!entry || !(json.ok in entry)) return json.maybe ? text : undefined
  const answer = entry[json.text]
  return entry[json.ok] === true && typeof answer === 'string' ? answer : undefined
}

/**
 * Where `output` stands in the JSON answer `text`, as the JSON string its content is written in:
 * found once, escaped as JSON.stringify does (else the answer is left whole).
 */
function wrappedOutput(text: string, output: string) {
  const escaped = JSON.stringify(output)
  const at = text.indexOf(escaped)
  if (at < 0 || text.indexOf(escaped, at + 1) >= 0) return undefined
  return { before: text.slice(0, at + 1), output, after: text.slice(at + escaped.length - 1) }
}

/**
 * The answers of a JSON list of `count` entries (Cline 4's read_files of several files), each
 * `{text, ok}`, and the text around them as written: pieces[0], answer 0's string content,
 * pieces[1], …; undefined when the list is not that, or an answer is not found as JSON.stringify
 * writes it.
 */
function jsonAnswers(
  text: string,
  json: JsonResult,
  count: number,
): { outputs: { text: string; ok: boolean }[]; pieces: string[] } | undefined {
  const value = parsedJson(text)
  if (!Array.isArray(value) || value.length !== count) return undefined
  const outputs: { text: string; ok: boolean }[] = []
  const pieces: string[] = []
  const field = JSON.stringify(json.text) + ':'
  let from = 0
  for (const entry of value as unknown[]) {
    if (typeof entry !== 'object' || entry === null) return undefined
    const record = entry as Record<string, unknown>
    const output = record[json.text]
    if (typeof output !== 'string') return undefined
    const written = field + JSON.stringify(output)
    const at = text.indexOf(written, from)
    if (at < 0) return undefined
    const start = at + field.length + 1
    pieces.push(text.slice(from, start))
    from = at + written.length - 1
    outputs.push({ text: output, ok: record[json.ok] === true })
  }
  pieces.push(text.slice(from))
  return { outputs, pieces }
}

function jsonEntry(text: string, list: boolean): Record<string, unknown> | undefined {
  let value = parsedJson(text)
  if (list) {
    if (!Array.isArray(value) || value.length !== 1) return undefined
    value = value[0]
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
}

/** A text's JSON value; undefined when it is not JSON. */
function parsedJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/** An agent's own placeholder for a result (Qwen Code's "unchanged", a cleared result). */
function agentStub(text: string, profile: Profile): boolean {
  return profile.agentStubs.some((stub) => stub.test(text.trimStart()))
}

/** A known tool's answer that is not as expected: shown as it came, and reported. */
function unrecognised(classified: Classified, expected: string): Facts {
  // A shell command is only guessed to be a read: its output owes the profile nothing.
  if (classified.kind === 'read' && classified.shell) return { call: { kind: 'other' } }
  return { call: { kind: 'other' }, unrecognised: expected }
}

function linesOf(content: string): string[] {
  return content === '' ? [] : content.replace(/\n$/, '').split('\n')
}

/** Agents trim trailing white space (Qwen Code) or CR; a line that differs only there matches. */
function sameLine(shown: string, file: string | undefined): boolean {
  return file !== undefined && (shown === file || shown.trimEnd() === file.trimEnd())
}

/** Where a read's file is: its path, against the directory its shell command ran in. */
function located(read: Extract<Classified, { kind: 'read' }>): string {
  return read.dir === undefined ? read.path : posix.join(read.dir, read.path)
}

/** Without a workspace, a path's identity is its normalised text. */
export function blindAbsPath(path: string): string {
  return posix.normalize(path.replaceAll('\\', '/'))
}
