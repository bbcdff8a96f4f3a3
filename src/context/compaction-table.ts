import { shortSha } from './brackets.js'
import { fill } from './text.js'
import type { ContextRules } from './types.js'

/** A full read the summary covers (stubs are not reads here). */
export interface TableRead {
  readonly id: string
  readonly path: string
  readonly absPath: string
  readonly start: number
  readonly end: number
  /** The file's length, when known. */
  readonly total?: number | undefined
  readonly sha256?: string | undefined
}

/**
 * The table after a summary (spec §7): the newest full read of each file by absolute path,
 * newest last, at most compaction.rows; undefined when there are no reads.
 */
export function renderCompactionTable(
  reads: readonly TableRead[],
  rules: ContextRules,
): string | undefined {
  const newestByPath = new Map<string, TableRead>()
  for (const read of reads) {
    newestByPath.delete(read.absPath) // re-insert so Map order is "newest last"
    newestByPath.set(read.absPath, read)
  }
  const rows = [...newestByPath.values()].slice(-rules.compaction.rows)
  if (rows.length === 0) return undefined
  const t = rules.texts
  const lines = rows.map((read) =>
    fill(t.table_row, {
      path: read.path,
      lines: tableLines(read, rules),
      sha: read.sha256 ? shortSha(read.sha256, rules) : '',
      id: read.id,
    }),
  )
  return [t.table_heading, '', t.table_sentence, '', t.table_header, ...lines].join('\n') + '\n'
}

function tableLines(read: TableRead, rules: ContextRules): string {
  const t = rules.texts
  if (read.total === 0) return t.table_lines_empty
  const range = { start: read.start, end: read.end }
  return read.total === undefined
    ? fill(t.table_lines_blind, range)
    : fill(t.table_lines, { ...range, total: read.total })
}
