import type { PatchHunk, Replacement } from '../tools/index.js'

/**
 * Applies an edit's replacements to a file's content, as the agent's tool did; undefined when
 * they do not apply (the text is not there, or not once where the tool needs it once; a line
 * past the end).
 */
export function applyReplacements(
  content: string,
  replacements: readonly Replacement[],
): string | undefined {
  let out = content
  for (const replacement of replacements) {
    const next =
      'insert' in replacement
        ? insertLines(out, replacement.at, replacement.insert)
        : replaceOnce(out, replacement.old, replacement.new, replacement.all)
    if (next === undefined) return undefined
    out = next
  }
  return out
}

/**
 * The content before an edit, from the content after it: each replacement undone, last first.
 * Only when that is unambiguous (the new text stands once), and checked by redoing the edit.
 */
export function undoReplacements(
  after: string,
  replacements: readonly Replacement[],
): string | undefined {
  let out = after
  for (let i = replacements.length - 1; i >= 0; i--) {
    const replacement = replacements[i]!
    if ('insert' in replacement) {
      const next = removeLines(out, replacement.at, replacement.insert)
      if (next === undefined) return undefined
      out = next
      continue
    }
    const { old: oldText, new: newText, all } = replacement
    if (all || newText === '') return undefined // where they stood cannot be told from the result
    const next = replaceOnce(out, newText, oldText, false)
    if (next === undefined) return undefined
    out = next
  }
  return applyReplacements(out, replacements) === after ? out : undefined
}

/**
 * Inserts text as lines after the first `at` lines, as OpenHands, Goose and Cline 4 do: the text
 * split on "\n" (a final "\n" in it gives an empty line), the file's final newline kept.
 */
function insertLines(content: string, at: number, text: string): string | undefined {
  const { lines, newline } = splitLines(content)
  if (at > lines.length) return undefined
  lines.splice(at, 0, ...text.split('\n'))
  return lines.join('\n') + (newline ? '\n' : '')
}

/** The inverse of insertLines: the inserted lines taken out where they stand. */
function removeLines(content: string, at: number, text: string): string | undefined {
  const { lines, newline } = splitLines(content)
  const inserted = text.split('\n')
  if (!inserted.every((line, i) => lines[at + i] === line)) return undefined
  lines.splice(at, inserted.length)
  return lines.length === 0 ? '' : lines.join('\n') + (newline ? '\n' : '')
}

/** A file's lines; an empty file takes a newline after inserted text, as the tools write it. */
function splitLines(content: string): { lines: string[]; newline: boolean } {
  if (content === '') return { lines: [], newline: true }
  const newline = content.endsWith('\n')
  return { lines: (newline ? content.slice(0, -1) : content).split('\n'), newline }
}

function replaceOnce(content: string, from: string, to: string, all: boolean): string | undefined {
  if (from === '') return undefined
  const first = content.indexOf(from)
  if (first < 0) return undefined
  if (all) return content.split(from).join(to)
  if (content.indexOf(from, first + 1) >= 0) return undefined
  return content.slice(0, first) + to + content.slice(first + from.length)
}

/** Applies apply_patch hunks (context and removed lines found in order, then replaced). */
export function applyHunks(content: string, hunks: readonly PatchHunk[]): string | undefined {
  return swapHunks(content, hunks, 'before', 'after')
}

/** The content before a patch, from the content after it. */
export function undoHunks(after: string, hunks: readonly PatchHunk[]): string | undefined {
  const before = swapHunks(after, hunks, 'after', 'before')
  return before !== undefined && applyHunks(before, hunks) === after ? before : undefined
}

function swapHunks(
  content: string,
  hunks: readonly PatchHunk[],
  from: 'before' | 'after',
  to: 'before' | 'after',
): string | undefined {
  const trailingNewline = content.endsWith('\n')
  const lines = content === '' ? [] : (trailingNewline ? content.slice(0, -1) : content).split('\n')
  let cursor = 0
  for (const hunk of hunks) {
    const find = hunk[from]
    const at =
      hunk.atEnd && find.length > 0 ? lines.length - find.length : indexOfLines(lines, find, cursor)
    if (at < 0 || !find.every((line, i) => lines[at + i] === line)) return undefined
    lines.splice(at, find.length, ...hunk[to])
    cursor = at + hunk[to].length
  }
  if (lines.length === 0) return ''
  return lines.join('\n') + (trailingNewline ? '\n' : '')
}

function indexOfLines(lines: readonly string[], find: readonly string[], from: number): number {
  if (find.length === 0) return from
  for (let i = from; i + find.length <= lines.length; i++) {
    if (find.every((line, k) => lines[i + k] === line)) return i
  }
  return -1
}
