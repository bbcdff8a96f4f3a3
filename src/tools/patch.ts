/**
 * The apply_patch grammar (Codex, opencode, Cline, Roo, OpenHands): `*** Begin Patch`, then per
 * file `*** Add File: p` (lines `+…`), `*** Delete File: p`, or `*** Update File: p` (optional
 * `*** Move to: q`) with `@@` hunks of ` `, `-`, `+` lines, then `*** End Patch`.
 */
export type PatchFile =
  | { readonly op: 'add'; readonly path: string; readonly content: string }
  | { readonly op: 'delete'; readonly path: string }
  | {
      readonly op: 'update'
      readonly path: string
      readonly moveTo?: string
      readonly hunks: readonly PatchHunk[]
    }

/** A hunk as the lines before and after it; context lines are in both. */
export interface PatchHunk {
  readonly before: readonly string[]
  readonly after: readonly string[]
  /** `*** End of File`: the hunk sits at the end. */
  readonly atEnd: boolean
  /** `@@ def name`: the hunk is after the first line that is this one (Codex's change context). */
  readonly anchor?: string
}

export function parsePatch(text: string): PatchFile[] | undefined {
  const lines = text.replace(/\r\n/g, '\n').split('\n')
  const begin = lines.findIndex((line) => line.trim() === '*** Begin Patch')
  if (begin < 0) return undefined
  const files: PatchFile[] = []
  let i = begin + 1
  const header = (line: string, tag: string) =>
    line.startsWith(tag) ? line.slice(tag.length).trim() : undefined
  while (i < lines.length) {
    const line = lines[i]!
    if (line.trim() === '*** End Patch') return files
    const add = header(line, '*** Add File: ')
    const del = header(line, '*** Delete File: ')
    const update = header(line, '*** Update File: ')
    i++
    if (add !== undefined) {
      const body: string[] = []
      while (i < lines.length && lines[i]!.startsWith('+')) body.push(lines[i++]!.slice(1))
      files.push({ op: 'add', path: add, content: body.length === 0 ? '' : body.join('\n') + '\n' })
    } else if (del !== undefined) {
      files.push({ op: 'delete', path: del })
    } else if (update !== undefined) {
      const moveTo = i < lines.length ? header(lines[i]!, '*** Move to: ') : undefined
      if (moveTo !== undefined) i++
      const hunks: PatchHunk[] = []
      let current:
        { before: string[]; after: string[]; atEnd: boolean; anchor?: string } | undefined
      while (
        i < lines.length &&
        (!lines[i]!.startsWith('*** ') || lines[i]!.startsWith('*** End of File'))
      ) {
        const hunkLine = lines[i++]!
        if (hunkLine.startsWith('*** End of File')) {
          if (current) current.atEnd = true
          continue
        }
        if (hunkLine.startsWith('@@')) {
          if (current && (current.before.length || current.after.length)) hunks.push(current)
          current = { before: [], after: [], atEnd: false }
          // `@@ text` (Codex's grammar: the rest after one space) anchors the hunk below that line.
          if (hunkLine.startsWith('@@ ')) current.anchor = hunkLine.slice(3)
          continue
        }
        current ??= { before: [], after: [], atEnd: false }
        const mark = hunkLine[0]
        const rest = hunkLine.slice(1)
        if (mark === '-') current.before.push(rest)
        else if (mark === '+') current.after.push(rest)
        else if (mark === ' ' || hunkLine === '') {
          current.before.push(rest)
          current.after.push(rest)
        } else return undefined // not the grammar: leave the call alone
      }
      if (current && (current.before.length || current.after.length)) hunks.push(current)
      files.push({ op: 'update', path: update, ...(moveTo ? { moveTo } : {}), hunks })
    } else if (line.trim() !== '') {
      return undefined
    }
  }
  return files
}
