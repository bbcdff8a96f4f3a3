import { posix } from 'node:path'
import type { SemanticCall } from '../context/index.js'
import { shownLines, type Classified, type Profile } from '../tools/index.js'
import type { Workspace } from '../workspace/index.js'

/**
 * Turns a classified call and its result into the engine's input, with the file facts of this
 * moment. Workspace mode: the file is hashed, and its facts are used only when the lines the
 * result shows are the file's lines (else it changed since, and the read is blind). Blind mode:
 * only what the result itself shows.
 */
export async function semanticCall(
  classified: Classified,
  text: string,
  profile: Profile,
  workspace: Workspace | undefined,
): Promise<SemanticCall> {
  // An agent's own placeholder is shown as it is, with an id: never a read, never a target.
  if (profile.agentStubs.some((stub) => stub.test(text.trimStart()))) return { kind: 'other' }
  switch (classified.kind) {
    case 'other':
      return { kind: 'other' }
    case 'write': {
      const snapshot = await workspace?.read(classified.path)
      return { kind: 'other', touches: [snapshot?.absPath ?? blindAbsPath(classified.path)] }
    }
    case 'read':
      break
    default:
      return { kind: 'listing', group: classified.kind, name: classified.name, args: classified.args }
  }
  if (profile.failures.some((failure) => failure.test(text.trimStart()))) return { kind: 'other' }
  const shown = shownLines(text, profile.envelopes)
  if (shown.kind === 'list') {
    return { kind: 'listing', group: 'list', name: 'read', args: { path: classified.path } }
  }
  const start = shown.start ?? classified.start
  const end = start + shown.lines.length - 1
  const snapshot = await workspace?.read(classified.path)
  if (snapshot) {
    const fileLines = snapshot.content === '' ? [] : snapshot.content.replace(/\n$/, '').split('\n')
    const matches =
      end <= fileLines.length &&
      shown.lines.every((line, i) => sameLine(line, fileLines[start - 1 + i]))
    if (matches) {
      return {
        kind: 'read',
        path: classified.path,
        absPath: snapshot.absPath,
        start: snapshot.lines === 0 ? 1 : start,
        end: snapshot.lines === 0 ? 0 : end,
        file: { lines: snapshot.lines, sha256: snapshot.sha256 },
      }
    }
  }
  if (shown.lines.length === 0) return { kind: 'other' } // nothing shown, nothing known
  return {
    kind: 'read',
    path: classified.path,
    absPath: snapshot?.absPath ?? blindAbsPath(classified.path),
    start,
    end,
    ...(shown.total === undefined ? {} : { total: shown.total }),
    // A file that changed since the tool read it is never a stub target: keep its lines unknown.
    ...(snapshot ? {} : { shown: shown.lines }),
  }
}

/** Agents trim trailing white space (Qwen Code) or CR; a line that differs only there matches. */
function sameLine(shown: string, file: string | undefined): boolean {
  return file !== undefined && (shown === file || shown.trimEnd() === file.trimEnd())
}

/** Without a workspace, a path's identity is its normalised text. */
function blindAbsPath(path: string): string {
  return posix.normalize(path.replaceAll('\\', '/'))
}
