/**
 * What the proxy did to the new tool results of one request, read back from the upstream body by
 * the spec's own texts (loop.json): stubs, "Same result as" dedupes, caps and edit diffs.
 */
import type { ContextRules } from '../context/index.js'
import { isRecord } from '../wire/chat.js'

export interface Actions {
  /** Tool results the request carried for the first time. */
  results: number
  /** Re-reads answered "Unchanged since #…". */
  stubs: number
  /** Listings and searches answered "Same result as #…". */
  dedupes: number
  /** Results cut to head and tail. */
  caps: number
  /** Lines those caps left out (recall shows them). */
  elidedLines: number
  /** Edits answered with the change's diff (or "Created, N lines."). */
  diffs: number
  /** Results of known agent tools the proxy did not recognise (the agent's output drifted). */
  unrecognised: number
  /** Requests where the client changed what it had sent before (the proxy's cache-break record). */
  clientBreaks: number
  /** Over new results shorter upstream than from the agent: characters saved, as /stats counts. */
  savedChars: number
  /** The same results' o200k tokens saved, counted: what `savedChars / 4` estimates. */
  savedTokens: number
}

export function noActions(): Actions {
  return {
    results: 0,
    stubs: 0,
    dedupes: 0,
    caps: 0,
    elidedLines: 0,
    diffs: 0,
    unrecognised: 0,
    clientBreaks: 0,
    savedChars: 0,
    savedTokens: 0,
  }
}

export function addActions(into: Actions, more: Actions): void {
  into.results += more.results
  into.stubs += more.stubs
  into.dedupes += more.dedupes
  into.caps += more.caps
  into.elidedLines += more.elidedLines
  into.diffs += more.diffs
  into.unrecognised += more.unrecognised
  into.clientBreaks += more.clientBreaks
  into.savedChars += more.savedChars
  into.savedTokens += more.savedTokens
}

/**
 * Characters and o200k tokens saved on the new results of a request: each new tool message as
 * the agent sent it against its rendering upstream, where the rendering is the shorter.
 */
export function savedOnResults(
  client: readonly unknown[],
  sent: readonly unknown[],
  known: ReadonlySet<string>,
  tokens: (text: string) => number,
): Pick<Actions, 'savedChars' | 'savedTokens'> {
  const agent = new Map<string, string>()
  for (const message of client)
    if (isRecord(message) && message.role === 'tool' && typeof message.tool_call_id === 'string')
      agent.set(message.tool_call_id, firstText(message.content))
  let savedChars = 0
  let savedTokens = 0
  for (const message of sent) {
    if (!isRecord(message) || message.role !== 'tool' || typeof message.tool_call_id !== 'string')
      continue
    const original = agent.get(message.tool_call_id)
    if (original === undefined || known.has(message.tool_call_id)) continue
    const rendering = firstText(message.content)
    if (rendering.length >= original.length) continue
    savedChars += original.length - rendering.length
    savedTokens += Math.max(0, tokens(original) - tokens(rendering))
  }
  return { savedChars, savedTokens }
}

/** A reader of renderings, built from the spec's texts. */
export function actionReader(rules: ContextRules) {
  const t = rules.texts
  const stub = new RegExp(`\\] ${pattern(t.stub)}$`)
  // A call that read several files (Cline 4's read_files): each stub ends its JSON string.
  const stubInString = new RegExp(`\\] ${pattern(t.stub)}(?=")`, 'g')
  const idLine = new RegExp(`^${pattern(t.id_bracket)}$`)
  const same = new RegExp(`^${pattern(t.id_bracket)} ${pattern(t.same_result)}$`)
  const elided = new RegExp(`^${pattern(t.elided, { count: '(\\d+)' })}$`, 'gm')
  const edit = new RegExp(`^${pattern(t.edit_bracket)}$`)
  const created = new RegExp(`^${pattern(t.created)}$`, 'm')
  const hunk = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@/m

  /** The actions in the tool messages of `messages` whose call ids are not in `known`. */
  return function read(messages: readonly unknown[], known: ReadonlySet<string>): Actions {
    const actions = noActions()
    for (const message of messages) {
      if (!isRecord(message) || message.role !== 'tool') continue
      if (typeof message.tool_call_id === 'string' && known.has(message.tool_call_id)) continue
      const text = firstText(message.content)
      actions.results++
      const firstLine = text.split('\n', 1)[0] ?? ''
      if (stub.test(firstLine)) actions.stubs++
      else if (idLine.test(firstLine) && text.startsWith('[{', firstLine.length + 1))
        actions.stubs += [...text.matchAll(stubInString)].length
      else if (same.test(firstLine)) actions.dedupes++
      else if (edit.test(firstLine) && (hunk.test(text) || created.test(text))) actions.diffs++
      let capped = false
      for (const match of text.matchAll(elided)) {
        capped = true
        actions.elidedLines += Number(match[1])
      }
      if (capped) actions.caps++
    }
    return actions
  }
}

/** The call ids of the tool messages in `messages`. */
export function toolCallIds(messages: readonly unknown[]): Set<string> {
  const ids = new Set<string>()
  for (const message of messages)
    if (isRecord(message) && message.role === 'tool' && typeof message.tool_call_id === 'string')
      ids.add(message.tool_call_id)
  return ids
}

/** The text the rendering stands in: the string, or the first text part. */
function firstText(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  const part = content.find((p) => isRecord(p) && p.type === 'text' && typeof p.text === 'string')
  return isRecord(part) ? String(part.text) : ''
}

/** A loop.json text as a regular expression: each `{name}` matches anything on the line. */
function pattern(template: string, groups: Record<string, string> = {}): string {
  return template
    .split(/(\{[a-z_]+\})/)
    .map((piece) => {
      const name = /^\{([a-z_]+)\}$/.exec(piece)?.[1]
      if (name !== undefined) return groups[name] ?? '[^\\n]+?'
      return piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('')
}

/**
 * Counts the tool messages that are an `--elide` stand-in: the template with a bracket and an id
 * (either may be empty) in it.
 */
/**
 * Counts the calls whose arguments carry `--elide-inputs`' stand-in (`{id}` an id): the calls
 * whose long strings a batch replaced.
 */
export function inputStandInCounter(template: string) {
  const standIn = new RegExp(pattern(template, { id: '#[0-9a-f]+' }))
  return function count(messages: readonly unknown[]): number {
    let n = 0
    for (const message of messages) {
      if (!isRecord(message) || !Array.isArray(message.tool_calls)) continue
      for (const call of message.tool_calls as unknown[]) {
        const fn = isRecord(call) && isRecord(call.function) ? call.function : undefined
        if (typeof fn?.arguments === 'string' && standIn.test(fn.arguments)) n++
      }
    }
    return n
  }
}

export function standInCounter(template: string) {
  const standIn = new RegExp(
    `^${pattern(template, { bracket: '(?:\\[[^\\]\\n]*\\])?', id: '(?:#[0-9a-f]+)?' })}$`,
  )
  return function count(messages: readonly unknown[]): number {
    let n = 0
    for (const message of messages)
      if (isRecord(message) && message.role === 'tool' && standIn.test(firstText(message.content)))
        n++
    return n
  }
}
