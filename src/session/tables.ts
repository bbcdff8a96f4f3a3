import { renderCompactionTable, type ContextRules, type TableRead } from '../context/index.js'
import { shortHash } from './identity.js'
import type { Store } from '../store/store.js'
import { contentText, withTextAfter, type ChatMessage } from '../wire/chat.js'
import { isReminderOnly } from '../wire/reminders.js'
import { keys, parseRecord, type ToolRecord } from './records.js'

/** The table added after a summary, fixed when the summary is first seen. */
interface CompactionRecord {
  readonly table: string | null
}

/**
 * A summary message is known by its role and text, less the parts that are an agent's reminders
 * alone: Qwen Code puts its `<system-reminder>` parts before its `<state_snapshot>` on the
 * requests after the first, and the summary is still the one whose table was fixed.
 */
export function summaryKey(message: ChatMessage): string {
  return shortHash(message.role + '\u0000' + summaryText(message))
}

/** The key of a summary before reminder parts were left out of it, where that differs. */
function legacySummaryKey(message: ChatMessage): string | undefined {
  const whole = contentText(message.content)
  return whole === summaryText(message) ? undefined : shortHash(message.role + '\u0000' + whole)
}

function summaryText(message: ChatMessage): string {
  const content = message.content
  if (!Array.isArray(content)) return contentText(content)
  const own = content.filter(
    (part) => part.type === 'text' && typeof part.text === 'string' && !isReminderOnly(part.text),
  )
  return own.length === 0 ? contentText(content) : contentText(own)
}

/** The tables after the request's summaries, by message index, and how many were new. */
export interface SummaryTables {
  readonly tables: Map<number, string>
  /** Summaries seen for the first time: the agent has just compacted. */
  readonly fresh: number
}

/**
 * The table for each summary in the request (spec §7). A summary seen before gets the table it
 * got then; a new one gets the newest full read of each file among the results of the request
 * before it (the history being summarised), walked back from the session's head: results taken
 * back by a rewind are not on that path, and the path ends where the previous compaction began.
 */
export async function compactionTables(
  messages: readonly ChatMessage[],
  summaries: readonly number[],
  scope: string,
  store: Store,
  rules: ContextRules,
): Promise<SummaryTables> {
  const tables = new Map<number, string>()
  let fresh = 0
  if (summaries.length === 0) return { tables, fresh }
  const summaryKeys = summaries.map((index) => keys.compaction(summaryKey(messages[index]!)))
  // A summary first seen by an earlier version may be stored under its whole text.
  const legacy = summaries.map((index) => legacySummaryKey(messages[index]!))
  const legacyKeys = legacy.flatMap((key) => (key === undefined ? [] : [keys.compaction(key)]))
  const known = await store.get(scope, [...summaryKeys, ...legacyKeys])
  let nextLegacy = summaryKeys.length
  const newest = summaries.length - 1
  for (const [i, index] of summaries.entries()) {
    const earlier = legacy[i] === undefined ? undefined : known[nextLegacy++]
    let record = parseRecord<CompactionRecord>(known[i] ?? earlier)
    if (!record) {
      fresh++
      // Only the newest summary covers the history the session has just had.
      const table =
        i === newest ? renderCompactionTable(await readsBeforeHead(scope, store), rules) : undefined
      const [winner] = await store.putIfAbsent(scope, [
        [summaryKeys[i]!, JSON.stringify({ table: table ?? null })],
      ])
      record = parseRecord<CompactionRecord>(winner)
    }
    if (record?.table) tables.set(index, record.table)
  }
  return { tables, fresh }
}

/**
 * Full reads on the path from the head back, oldest first; the path stops at the results an
 * earlier summary already covered. Moves that mark on to the newest result of the path.
 */
async function readsBeforeHead(scope: string, store: Store): Promise<TableRead[]> {
  const [head, mark] = await Promise.all([
    readHead(scope, store),
    store.getLatest(scope, WATERMARK),
  ])
  const covered = mark === undefined ? 0 : Number(mark)
  const reads: TableRead[] = []
  const seen = new Set<string>()
  let newest = covered
  let key = head?.key
  while (key !== undefined && !seen.has(key)) {
    seen.add(key)
    const [value] = await store.get(scope, [keys.tool(key)])
    const record = parseRecord<ToolRecord>(value)
    if (!record || record.n <= covered) break
    newest = Math.max(newest, record.n)
    // A stub is not a read here; a read rendered in full is.
    if (record.read && !record.stub) reads.push(record.read)
    // A call that read several files: the ones it shows in full (pushed last first, as the
    // path is walked newest first and turned round at the end).
    for (const read of [...(record.reads ?? [])].reverse()) reads.push(read)
    key = record.prev
  }
  if (newest > covered) await store.setLatest(scope, WATERMARK, String(newest))
  return reads.reverse()
}

const HEAD = 'head'
const WATERMARK = 'covered'

/** The session's last tool message and when it was sent. */
export interface Head {
  readonly key: string
  readonly at: number
}

export async function readHead(scope: string, store: Store): Promise<Head | undefined> {
  return parseRecord<Head>(await store.getLatest(scope, HEAD))
}

/** Remembers the request's last tool message: the end of the history a later summary covers. */
export async function recordHead(scope: string, head: Head, store: Store): Promise<void> {
  await store.setLatest(scope, HEAD, JSON.stringify(head))
}

/** Appends a table after a summary's text: a string grows, parts get one more text part. */
export function withTable(message: ChatMessage, table: string): ChatMessage {
  return { ...message, content: withTextAfter(message.content, table) }
}
