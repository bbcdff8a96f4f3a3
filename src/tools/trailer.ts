import type { Trailer } from './define-profile.js'

/** A tool result split into the tool's own output and what the agent appended after it. */
export interface Split {
  readonly body: string
  /** The appended blocks with the white space before them, byte for byte; '' when none. */
  readonly trailer: string
}

/**
 * Peels the blocks an agent appends after any tool's output (Claude Code's `<system-reminder>`)
 * off the end of a result, last first. Linear: it only looks at the text's end. A result that is
 * nothing but such blocks is the tool's own first block, the rest appended after it: Claude
 * Code's empty-file read and its read past the end are one reminder, and on most models it
 * appends its own (tokens left, task nudges) after that. Beside an image (a Read of a PNG),
 * though, the tool's answer is the image: such a text is the agent's reminders alone.
 */
export function splitTrailer(
  text: string,
  trailers: readonly Trailer[],
  /** False where the result has parts besides its text (an image): then its text is all appended. */
  textIsAll = true,
): Split {
  let cut = text.length
  for (;;) {
    const end = trimmedEnd(text, cut)
    const block = trailers.find((t) => text.startsWith(t.close, end - t.close.length))
    const open = block ? text.lastIndexOf(block.open, end - block.close.length) : -1
    if (!block || open < 0) break
    // The first block of a text that is only blocks: the tool's answer.
    if (trimmedEnd(text, open) === 0)
      return textIsAll
        ? { body: text.slice(0, end), trailer: text.slice(end) }
        : { body: '', trailer: text }
    cut = trimmedEnd(text, open)
  }
  return { body: text.slice(0, cut), trailer: text.slice(cut) }
}

function trimmedEnd(text: string, end: number): number {
  let i = end
  while (i > 0 && /\s/.test(text[i - 1]!)) i--
  return i
}
