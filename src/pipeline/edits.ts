import type { PatchHunk, Replacement } from '../tools/index.js'

/**
 * Applies an edit's replacements to a file's content, as the agent's tool did; undefined when
 * they do not apply (the text is not there, or not once where the tool needs it once).
 */
export function applyReplacements(
  content: string,
  replacements: readonly Replacement[],
): string | undefined {
  let out = content
  for (const replacement of replacements) {
    const next = replaceOnce(out, replacement.old, replacement.new, replacement.all)
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
    const { old: oldText, new: newText, all } = replacements[i]!
    if (all || newText === '') return undefined // where they stood cannot be told from the result
    const next = replaceOnce(out, newText, oldText, false)
    if (next === undefined) return undefined
    out = next
  }
  return applyReplacements(out, replacements) === after ? out : undefined
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
