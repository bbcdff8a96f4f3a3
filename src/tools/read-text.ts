import type { ReadEnvelope } from './define-profile.js'

/** `cat -n` and `nl -ba`: the number right-aligned, a tab, the line. */
const CAT_N = /^ *(\d+)\t(.*)$/s

/**
 * Reads the lines a read result shows. Agents number lines in several ways (research/agents.md
 * §1.5); when every content line carries one numbering, it is taken off and its numbers give
 * the range shown. Otherwise the text is the lines themselves.
 */
const NUMBERINGS: readonly RegExp[] = [
  /^ *(\d+)→(.*)$/s, // Claude Code Read
  CAT_N,
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
  /** Set when the wrapper says the result is not a file's lines: a listing, or something else. */
  readonly kind?: 'list' | 'other'
  /**
   * The lines were cut at a size limit, the wrapper says the file goes on, or a line was cut at
   * the agent's line-length limit: they are never the whole file.
   */
  readonly cut?: boolean
  /** The result shows more lines after a cut middle than `lines` (which are its head). */
  readonly more?: boolean
  /**
   * The text looks numbered but its numbering does not run on (a wrapper this table does not
   * know, lines left out): its lines are not known, and taking the text as lines would be wrong.
   */
  readonly garbled?: boolean
}

export interface ShownOptions {
  /**
   * A final empty numbered line is a line of the file. By default it stands for the file's final
   * newline (Claude Code, Roo, OpenHands and Crush split the text on "\n" and number the empty
   * string after the last one) and is dropped, unless a stated length counts it.
   */
  readonly realFinalEmpty?: boolean
  /**
   * What a shell command printed: `true`, lines numbered as `cat -n` numbers them (else the text
   * is garbled); `false`, the lines themselves, however they look. Unset: the agents' numberings
   * are recognised.
   */
  readonly numbered?: boolean
}

/** The lines a read shows, with its agent's wrapper (if any) taken off. */
export function shownLines(
  text: string,
  envelopes: readonly ReadEnvelope[] = [],
  options: ShownOptions = {},
): ShownLines {
  for (const envelope of envelopes) {
    const match = envelope.pattern.exec(text)
    if (!match) continue
    if (envelope.kind === 'list' || envelope.kind === 'other')
      return { lines: [], kind: envelope.kind }
    if (envelope.kind === 'empty') return { start: 1, lines: [], total: 0 }
    const groups = match.groups ?? {}
    const body = groups.body ?? ''
    const total = optionalNumber(groups.total) ?? optionalNumber(groups.of)
    if (envelope.cut)
      return {
        ...cutLines(body, options.numbered),
        ...(envelope.cut === 'middle' ? { more: true } : {}),
      }
    const inner = bareLines(body, options.numbered)
    const start = inner.start ?? optionalNumber(groups.start)
    const lineCut = envelope.lineCut
    const cut = envelope.partial === true || (lineCut && inner.lines.some((l) => lineCut.test(l)))
    return finalNewline(
      {
        ...inner,
        ...(start === undefined ? {} : { start }),
        ...(total === undefined ? {} : { total }),
        ...(cut ? { cut: true } : {}),
      },
      inner.start !== undefined,
      options,
    )
  }
  const inner = bareLines(text, options.numbered)
  return finalNewline(inner, inner.start !== undefined, options)
}

/** Lines cut at a size limit: the last is partial unless the cut fell at a line's end. */
function cutLines(body: string, numbered: boolean | undefined): ShownLines {
  const inner = bareLines(body, numbered)
  const lines = body.endsWith('\n') ? inner.lines : inner.lines.slice(0, -1)
  return { ...inner, lines, cut: true }
}

/** Drops the empty numbered line that only stands for the file's final newline. */
function finalNewline(shown: ShownLines, numbered: boolean, options: ShownOptions): ShownLines {
  if (!numbered || options.realFinalEmpty || shown.lines.at(-1) !== '') return shown
  const last = (shown.start ?? 1) + shown.lines.length - 1
  if (shown.total !== undefined && last <= shown.total) return shown // the length counts it
  return { ...shown, lines: shown.lines.slice(0, -1) }
}

function bareLines(text: string, numbered: boolean | undefined): ShownLines {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n')
  if (lines.length === 0 || numbered === false) return { lines }
  for (const numbering of numbered ? [CAT_N] : NUMBERINGS) {
    const parsed = numberedLines(lines, numbering)
    if (parsed) return parsed
  }
  if (numbered) return { lines, garbled: true }
  // A numbered first or last line whose numbering does not hold for all: not raw text.
  const edges = [lines[0]!, lines.at(-1)!]
  if (NUMBERINGS.some((numbering) => edges.some((line) => numbering.test(line))))
    return { lines, garbled: true }
  return { lines }
}

function optionalNumber(value: string | undefined): number | undefined {
  return value === undefined ? undefined : Number(value)
}

function numberedLines(lines: readonly string[], numbering: RegExp): ShownLines | undefined {
  const out: string[] = []
  let first: number | undefined
  for (const [i, line] of lines.entries()) {
    const match = numbering.exec(line) ?? bareFinalNumber(lines, i, numbering)
    if (!match) return undefined
    const n = Number(match[1])
    if (first === undefined) first = n
    else if (n !== first + i) return undefined // numbering must run on without gaps
    out.push(match[2] ?? '')
  }
  return first === undefined ? undefined : { start: first, lines: out }
}

/**
 * The empty line after a file's final newline, numbered `N\t` with the tab trimmed away: Claude
 * Code (2.1.x) trims the result's trailing whitespace before it appends its reminder, so the last
 * line is the bare number. Taken only as the last line, after a tab-numbered one; the numbering
 * must still run on (checked by the caller).
 */
function bareFinalNumber(
  lines: readonly string[],
  i: number,
  numbering: RegExp,
): RegExpExecArray | null {
  if (numbering !== CAT_N || i === 0 || i !== lines.length - 1) return null
  return /^ *(\d+)$/.exec(lines[i]!)
}
