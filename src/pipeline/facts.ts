import { posix } from 'node:path'
import { sha256Hex, type FileChange, type SemanticCall } from '../context/index.js'
import { shownLines, type Classified, type PatchFile, type Profile } from '../tools/index.js'
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
}

// A shell read that failed prints the program's complaint, not the file.
const SHELL_FAILURE = /^(cat|sed|head|nl|tail): /

/**
 * Turns a classified call and its result into the engine's input, with the file facts of this
 * moment. Workspace mode: files are hashed, and a read's facts are used only when the lines it
 * shows are the file's lines (else it changed since, and the read is blind). Blind mode: only
 * what the result shows, and the file views earlier results of the request established.
 */
export async function resultFacts(
  classified: Classified,
  text: string,
  profile: Profile,
  workspace: Workspace | undefined,
  views: FileViews,
): Promise<Facts> {
  // An agent's own placeholder is shown as it is, with an id: never a read, never a target.
  if (profile.agentStubs.some((stub) => stub.test(text.trimStart())))
    return { call: { kind: 'other' } }
  switch (classified.kind) {
    case 'other':
      return { call: { kind: 'other' } }
    case 'read':
      return readFacts(classified, text, profile, workspace)
    case 'edit':
    case 'write':
    case 'patch':
      return changeFacts(classified, text, profile, workspace, views)
    default:
      return {
        call: {
          kind: 'listing',
          group: classified.kind,
          name: classified.name,
          args: classified.args,
        },
      }
  }
}

async function readFacts(
  classified: Extract<Classified, { kind: 'read' }>,
  text: string,
  profile: Profile,
  workspace: Workspace | undefined,
): Promise<Facts> {
  const body = classified.shell ? shellOutput(text, profile) : text
  if (body === undefined || SHELL_FAILURE.test(body)) return { call: { kind: 'other' } }
  if (profile.failures.some((failure) => failure.test(body.trimStart())))
    return { call: { kind: 'other' } }
  const shown = shownLines(body, profile.envelopes)
  if (shown.kind === 'list') {
    return {
      call: { kind: 'listing', group: 'list', name: 'read', args: { path: classified.path } },
    }
  }
  const start = shown.start ?? classified.start
  const end = start + shown.lines.length - 1
  const snapshot = await workspace?.read(classified.path)
  if (snapshot) {
    const fileLines = linesOf(snapshot.content)
    const matches =
      end <= fileLines.length &&
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
        },
        views: [viewOf(snapshot)],
      }
    }
  }
  if (shown.lines.length === 0) return { call: { kind: 'other' } } // nothing shown, nothing known
  const absPath = snapshot?.absPath ?? blindAbsPath(classified.path)
  // Blind, the result shows the whole file when it says so, or when the call asked for no
  // range and got fewer lines than an agent's window (2000): nothing was cut.
  const whole =
    !snapshot &&
    start === 1 &&
    (shown.total !== undefined
      ? end === shown.total
      : classified.end === undefined && shown.lines.length < 2000)
  const content = shown.lines.join('\n') + '\n'
  return {
    call: {
      kind: 'read',
      path: classified.path,
      absPath,
      start,
      end,
      ...(shown.total === undefined ? {} : { total: shown.total }),
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
  const paths = classified.kind === 'patch' ? classified.files.map(patchPath) : [classified.path]
  const snapshots = await Promise.all(paths.map((path) => workspace?.read(path)))
  const absPaths = paths.map((path, i) => snapshots[i]?.absPath ?? blindAbsPath(path))
  // A failed edit changed nothing: its error text stays, with its id.
  if (!success) return { call: { kind: 'other' } }
  const note = success.match?.groups?.note?.trim() || undefined
  const fallback: Facts = { call: { kind: 'other', touches: absPaths } }

  const changes: FileChange[] = []
  const files = classified.kind === 'patch' ? classified.files : [undefined]
  for (const [i, file] of files.entries()) {
    const path = paths[i]!
    const absPath = absPaths[i]!
    const snapshot = snapshots[i]
    const change = await fileChange(
      classified,
      file,
      path,
      absPath,
      snapshot,
      success.rule.created === true,
      views,
    )
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

async function fileChange(
  classified: Extract<Classified, { kind: 'edit' | 'write' | 'patch' }>,
  file: PatchFile | undefined,
  path: string,
  absPath: string,
  snapshot: FileSnapshot | undefined,
  created: boolean,
  views: FileViews,
): Promise<FileChange | undefined> {
  const base = { path: file?.op === 'update' && file.moveTo ? file.moveTo : path, absPath }
  const view = () => views.content(absPath)
  if (file?.op === 'add')
    return { ...base, before: null, after: snapshot?.content ?? file.content, ...shaOf(snapshot) }
  if (file?.op === 'delete') return snapshot ? undefined : { ...base, before: '', after: null }
  if (classified.kind === 'write') {
    const after = snapshot?.content ?? classified.content
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
  if (snapshot) {
    const undone =
      classified.kind === 'edit'
        ? undoReplacements(snapshot.content, classified.replacements)
        : file?.op === 'update'
          ? undoHunks(snapshot.content, file.hunks)
          : undefined
    const viewed = undone === undefined ? await view() : undefined
    const before =
      undone ?? (viewed !== undefined && redo(viewed) === snapshot.content ? viewed : undefined)
    return before === undefined
      ? undefined
      : { ...base, before, after: snapshot.content, sha256: snapshot.sha256 }
  }
  const before = await view()
  const after = before === undefined ? undefined : redo(before)
  return before === undefined || after === undefined ? undefined : { ...base, before, after }
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

/** The output inside an agent's shell wrapper (a successful run only); raw output as it is. */
function shellOutput(text: string, profile: Profile): string | undefined {
  for (const envelope of profile.shellEnvelopes) {
    if (!envelope.any.test(text)) continue
    // A wrapper of a failed run must not pass for file content.
    return envelope.success.exec(text)?.groups?.body
  }
  const structured = structuredShellOutput(text)
  return structured === null ? text : structured
}

/** Codex's structured shell result: {"output": …, "metadata": {"exit_code": 0}}. */
function structuredShellOutput(text: string): string | undefined | null {
  if (!text.startsWith('{"output":')) return null
  try {
    const value = JSON.parse(text) as { output?: unknown; metadata?: { exit_code?: unknown } }
    return typeof value.output === 'string' && value.metadata?.exit_code === 0
      ? value.output
      : undefined
  } catch {
    return null
  }
}

function linesOf(content: string): string[] {
  return content === '' ? [] : content.replace(/\n$/, '').split('\n')
}

/** Agents trim trailing white space (Qwen Code) or CR; a line that differs only there matches. */
function sameLine(shown: string, file: string | undefined): boolean {
  return file !== undefined && (shown === file || shown.trimEnd() === file.trimEnd())
}

/** Without a workspace, a path's identity is its normalised text. */
export function blindAbsPath(path: string): string {
  return posix.normalize(path.replaceAll('\\', '/'))
}
