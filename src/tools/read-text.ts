import type { ReadEnvelope } from './define-profile.js'

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
  /** First line number, when the result numbers its lines or its wrapper says. */
  readonly start?: number
  readonly lines: readonly string[]
  /** The file's length, when the wrapper states it. */
  readonly total?: number
  /** Set when the wrapper says the result is not a file's lines. */
  readonly kind?: 'list'
}

/** The lines a read shows, with its agent's wrapper (if any) taken off. */
export function shownLines(text: string, envelopes: readonly ReadEnvelope[] = []): ShownLines {
  for (const envelope of envelopes) {
    const match = envelope.pattern.exec(text)
    if (!match) continue
    if (envelope.kind) return { lines: [], kind: envelope.kind }
    const groups = match.groups ?? {}
    const inner = bareLines(groups.body ?? '')
    const start = inner.start ?? optionalNumber(groups.start)
    const total = optionalNumber(groups.total) ?? optionalNumber(groups.of)
    return {
      lines: inner.lines,
      ...(start === undefined ? {} : { start }),
      ...(total === undefined ? {} : { total }),
    }
  }
  return bareLines(text)
}

function bareLines(text: string): ShownLines {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n')
  if (lines.length === 0) return { lines }
  for (const numbering of NUMBERINGS) {
    const parsed = numberedLines(lines, numbering)
    if (parsed) return parsed
  }
  return { lines }
}

function optionalNumber(value: string | undefined): number | undefined {
  return value === undefined ? undefined : Number(value)
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
