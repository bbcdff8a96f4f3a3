/**
 * Reads the lines a read result shows. Agents number lines in several ways (research/agents.md
 * §1.5); when every content line carries one numbering, it is taken off and its numbers give
 * the range shown. Otherwise the text is the lines themselves.
 */
const NUMBERINGS: readonly RegExp[] = [
  /^ *(\d+)→(.*)$/s, // Claude Code Read
  /^ *(\d+)\t(.*)$/s, // cat -n
  /^(\d{5})\| (.*)$/s, // opencode until 2026
  /^(\d+): (.*)$/s, // opencode 2026
  /^ *(\d+) \| (.*)$/s, // Cline, Roo
  /^ *(\d+)\|(.*)$/s, // Crush
  /^L(\d+): (.*)$/s, // Codex read_file
]

export interface ShownLines {
  /** First line number, when the result numbers its lines. */
  readonly start?: number
  readonly lines: readonly string[]
}

export function shownLines(text: string): ShownLines {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n')
  if (lines.length === 0) return { lines }
  for (const numbering of NUMBERINGS) {
    const parsed = numberedLines(lines, numbering)
    if (parsed) return parsed
  }
  return { lines }
}

function numberedLines(lines: readonly string[], numbering: RegExp): ShownLines | undefined {
  const out: string[] = []
  let first: number | undefined
  for (const [i, line] of lines.entries()) {
    const match = numbering.exec(line)
    if (!match) return undefined
    const n = Number(match[1])
    if (first === undefined) first = n
    else if (n !== first + i) return undefined // numbering must run on without gaps
    out.push(match[2] ?? '')
  }
  return first === undefined ? undefined : { start: first, lines: out }
}
