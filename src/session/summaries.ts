import type { CompactionMarker } from '../tools/index.js'
import { contentText, type ChatMessage } from '../wire/chat.js'

/**
 * Where the summaries of the agent's compactions stand in a request: by each agent's own marker
 * (its role and fixed text, among the tools it offers), or at the index the client names in the
 * compaction header.
 */
export function summaryIndices(
  messages: readonly ChatMessage[],
  markers: readonly CompactionMarker[],
  signalled?: number,
  offered: ReadonlySet<string> = new Set(),
): number[] {
  const found = new Set<number>()
  if (signalled !== undefined && signalled >= 0 && signalled < messages.length) found.add(signalled)
  const first = messages.findIndex((message) => message.role !== 'system')
  const applying = markers.filter((m) => !m.offered || m.offered.every((name) => offered.has(name)))
  messages.forEach((message, index) => {
    const marker = applying.find((m) => (!m.first || index === first) && marks(m, message))
    if (!marker) return
    const at =
      marker.summary === 'next' ? index + 1 : marker.summary === 'previous' ? index - 1 : index
    if (at >= 0 && at < messages.length) found.add(at)
  })
  return [...found].sort((a, b) => a - b)
}

/**
 * Whether a message is a marker's: by its whole text or by one of its text parts, since an agent
 * may put parts of its own before the summary (Claude Code's automatic compaction starts its
 * summary message with a `<system-reminder>` part giving the date).
 */
export function marks(marker: CompactionMarker, message: ChatMessage): boolean {
  if (marker.role !== message.role) return false
  const content = message.content
  if (marker.pattern.test(contentText(content))) return true
  return (
    Array.isArray(content) &&
    content.some(
      (part) =>
        part.type === 'text' && typeof part.text === 'string' && marker.pattern.test(part.text),
    )
  )
}

/**
 * The compaction header's value: a message index (from 0), or "true" for the first message that
 * is not the system prompt.
 */
export function signalledSummary(
  value: string | null | undefined,
  messages: readonly ChatMessage[],
): number | undefined {
  if (!value) return undefined
  const trimmed = value.trim().toLowerCase()
  if (/^\d+$/.test(trimmed)) return Number(trimmed)
  if (trimmed === 'true' || trimmed === 'yes') {
    const first = messages.findIndex((message) => message.role !== 'system')
    return first < 0 ? undefined : first
  }
  return undefined
}
