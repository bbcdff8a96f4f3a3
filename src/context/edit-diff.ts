import { structuredPatch } from 'diff'
import { shortSha } from './brackets.js'
import { capText } from './cap.js'
import { sha256Hex } from './dedupe-table.js'
import { countLines, fill } from './text.js'
import type { ContextRules, EditCall, FileChange, PatchCall } from './types.js'

/**
 * An edit's answer (spec §5): the unified diff of the change, 3 lines of context, hunks only,
 * under a bracket with the path and the new content's hash; "Created" for a new file; "deleted".
 */
export function renderEdit(call: EditCall, id: string, rules: ContextRules): string {
  const t = rules.texts
  const answer = describeChange(call, rules, {
    diff: (sha) => fill(t.edit_bracket, { id, path: call.path, sha }),
    created: (sha) => fill(t.edit_bracket, { id, path: call.path, sha }),
    deleted: () => fill(t.deleted_bracket, { id, path: call.path }),
  })
  return withNote(answer, id, rules, call.note)
}

/**
 * An apply_patch answer: one file reads like an edit; several answer the id alone, then each
 * file in its own bracket with its change, in the patch's order.
 */
export function renderPatch(call: PatchCall, id: string, rules: ContextRules): string {
  const [only, ...more] = call.files
  if (only && more.length === 0)
    return renderEdit({ kind: 'edit', ...only, note: call.note }, id, rules)
  const t = rules.texts
  const parts = call.files.map((file) => {
    const answer = describeChange(file, rules, {
      diff: (sha) => fill(t.edit_file_bracket, { path: file.path, sha }),
      created: (sha) => fill(t.edit_file_bracket, { path: file.path, sha }),
      deleted: () => fill(t.deleted_file_bracket, { path: file.path }),
    })
    return answer.head + (answer.body === undefined ? '' : '\n' + answer.body)
  })
  const body = parts.join('\n')
  const answer = { head: fill(t.id_bracket, { id }), body: body === '' ? undefined : body }
  return withNote(answer, id, rules, call.note)
}

interface Answer {
  /** The bracket line (with "Created, N lines." after it for a new file). */
  readonly head: string
  /** The diff, when there is one to show. */
  readonly body?: string | undefined
}

interface Brackets {
  diff(sha: string): string
  created(sha: string): string
  deleted(): string
}

function describeChange(change: FileChange, rules: ContextRules, brackets: Brackets): Answer {
  if (change.after === null) return { head: brackets.deleted() }
  const sha = shortSha(change.sha256 ?? sha256Hex(change.after), rules)
  if (change.before === null) {
    const created = fill(rules.texts.created, { lines: countLines(change.after) })
    return { head: brackets.created(sha) + ' ' + created }
  }
  const hunks = unifiedHunks(change.before, change.after)
  return { head: brackets.diff(sha), body: hunks === '' ? undefined : hunks }
}

/** The diff is capped like any output; the bracket line stays first, the tool's note last. */
function withNote(
  answer: Answer,
  id: string,
  rules: ContextRules,
  note: string | undefined,
): string {
  const body = answer.body === undefined ? '' : '\n' + capText(answer.body, id, rules)
  return answer.head + body + (note ? '\n' + note : '')
}

/** Hunks of a unified diff with 3 lines of context and no file header. */
export function unifiedHunks(before: string, after: string): string {
  const patch = structuredPatch('', '', before, after, undefined, undefined, { context: 3 })
  const out: string[] = []
  for (const hunk of patch.hunks) {
    // Unified diff numbers an empty side by the line before it.
    const oldStart = hunk.oldLines === 0 ? hunk.oldStart - 1 : hunk.oldStart
    const newStart = hunk.newLines === 0 ? hunk.newStart - 1 : hunk.newStart
    out.push(`@@ -${oldStart},${hunk.oldLines} +${newStart},${hunk.newLines} @@`, ...hunk.lines)
  }
  return out.join('\n')
}
