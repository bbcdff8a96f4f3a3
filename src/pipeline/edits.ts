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

/**
 * Applies apply_patch hunks as Codex does (codex-rs/apply-patch, which the other agents' ports
 * follow): each hunk's `@@ anchor` line is sought first (exact, then without trailing, then
 * surrounding white space), its lines from there; a hunk that only adds lines goes at the end of
 * the file; `*** End of File` puts it last. Only exact matches of the lines: undefined when the
 * tool could only have matched them loosely.
 */
export function applyHunks(content: string, hunks: readonly PatchHunk[]): string | undefined {
  if (!placeable(hunks)) return undefined
  const { lines, trailingNewline } = hunkLines(content)
  let cursor = 0
  for (const hunk of hunks) {
    if (hunk.anchor !== undefined) {
      const anchor = seekAnchor(lines, hunk.anchor, cursor)
      if (anchor < 0) return undefined
      cursor = anchor + 1
    }
    if (hunk.before.length === 0) {
      lines.splice(lines.length, 0, ...hunk.after)
      continue
    }
    const at = hunk.atEnd
      ? lines.length - hunk.before.length
      : indexOfLines(lines, hunk.before, cursor)
    if (at < 0 || !hunk.before.every((line, i) => lines[at + i] === line)) return undefined
    lines.splice(at, hunk.before.length, ...hunk.after)
    cursor = at + hunk.after.length
  }
  return joinLines(lines, trailingNewline)
}

/**
 * The content before a patch, from the content after it: each hunk's new lines must stand once
 * from where the hunk can be (also counting lines equal but for white space or punctuation, where
 * the tool may have matched loosely), then checked by redoing the patch.
 */
export function undoHunks(after: string, hunks: readonly PatchHunk[]): string | undefined {
  if (!placeable(hunks)) return undefined
  const { lines, trailingNewline } = hunkLines(after)
  let cursor = 0
  // Pure additions went at the end, in order: the last one is last.
  const added = hunks.filter((hunk) => hunk.before.length === 0)
  let end = lines.length - added.reduce((n, hunk) => n + hunk.after.length, 0)
  for (const hunk of hunks) {
    if (hunk.before.length === 0) {
      if (end < cursor || !hunk.after.every((line, i) => lines[end + i] === line)) return undefined
      lines.splice(end, hunk.after.length)
      continue
    }
    let at: number
    if (hunk.atEnd) at = end - hunk.after.length
    else {
      const loose = looseMatches(lines, hunk.after, cursor, end)
      if (loose.length !== 1) return undefined
      at = loose[0]!
    }
    if (at < cursor || !hunk.after.every((line, i) => lines[at + i] === line)) return undefined
    lines.splice(at, hunk.after.length, ...hunk.before)
    end += hunk.before.length - hunk.after.length
    cursor = at + hunk.before.length
  }
  const before = joinLines(lines, trailingNewline)
  return applyHunks(before, hunks) === after ? before : undefined
}

/** Lines added at the end twice (two pure additions, or one with an end hunk): order unknown. */
function placeable(hunks: readonly PatchHunk[]): boolean {
  const atEnd = hunks.filter((hunk) => hunk.before.length === 0 || hunk.atEnd).length
  return atEnd <= 1 || hunks.every((hunk) => hunk.before.length > 0)
}

function hunkLines(content: string): { lines: string[]; trailingNewline: boolean } {
  const trailingNewline = content.endsWith('\n')
  const lines = content === '' ? [] : (trailingNewline ? content.slice(0, -1) : content).split('\n')
  return { lines, trailingNewline }
}

function joinLines(lines: readonly string[], trailingNewline: boolean): string {
  if (lines.length === 0) return ''
  return lines.join('\n') + (trailingNewline ? '\n' : '')
}

/** Codex's seek of a `@@` line: exact, then its end trimmed, then both ends; else not found. */
function seekAnchor(lines: readonly string[], anchor: string, from: number): number {
  for (const same of [
    (a: string, b: string) => a === b,
    (a: string, b: string) => a.trimEnd() === b.trimEnd(),
    (a: string, b: string) => a.trim() === b.trim(),
  ]) {
    for (let i = from; i < lines.length; i++) if (same(lines[i]!, anchor)) return i
  }
  return -1
}

/** Codex also matches lines that differ in white space or in typographic punctuation. */
function loosely(line: string): string {
  return line
    .trim()
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/[\u2018\u2019\u201A\u201B]/g, "'")
    .replace(/[\u201C\u201D\u201E\u201F]/g, '"')
    .replace(/[\u00A0\u2002-\u200A\u202F\u205F\u3000]/g, ' ')
}

/** Where `find` stands loosely in `lines[from, to)`. */
function looseMatches(lines: readonly string[], find: readonly string[], from: number, to: number) {
  const want = find.map(loosely)
  const found: number[] = []
  for (let i = from; i + find.length <= to; i++)
    if (want.every((line, k) => loosely(lines[i + k]!) === line)) found.push(i)
  return found
}

function indexOfLines(lines: readonly string[], find: readonly string[], from: number): number {
  if (find.length === 0) return from
  for (let i = from; i + find.length <= lines.length; i++) {
    if (find.every((line, k) => lines[i + k] === line)) return i
  }
  return -1
}
