/**
 * Walks a conformance case the way a session would: ids run on through the session, the dedupe
 * table is only what the current request carries, and the compaction table draws from the reads
 * of turns still in the history. Every text comes from src/context; this file keeps the books.
 */
import { posix } from 'node:path'
import {
  DedupeTable,
  formatId,
  parseId,
  renderCompactionTable,
  renderRecall,
  renderResult,
  renderRewritten,
  sha256Hex,
  splitLines,
  type ContextRules,
  type FileChange,
  type FullRendering,
  type Rendering,
  type SemanticCall,
} from '../../src/context/index.js'
import type { Step, TextSpec } from './case-schema.js'

export function expandText(spec: TextSpec): string {
  if (typeof spec === 'string') return spec
  return spec
    .map((piece) => {
      if (typeof piece === 'string') return piece
      if ('repeat' in piece) return piece.repeat.repeat(piece.count)
      const lines: string[] = []
      for (let n = piece.from; n <= piece.to; n++)
        lines.push(piece.gen.replaceAll('{n}', String(n)))
      return lines.join('\n')
    })
    .join('\n')
}

/** One produced text, for the runner to compare with the case's `expect`. */
export interface Produced {
  readonly step: number
  readonly actual: string | null
  readonly expected: string | null
}

interface Result {
  readonly step: number
  readonly number: number
  readonly rendering: Rendering
  /** The request (counted from 0) that carried it. */
  readonly request: number
}

interface Marker {
  readonly step: number
  readonly kind: 'reply' | 'compaction'
}

export function simulate(steps: readonly Step[], rules: ContextRules): Produced[] {
  const produced: Produced[] = []
  const stored = new Map<number, string>()
  let results: Result[] = []
  let markers: Marker[] = []
  let nextNumber = 1

  const requestIndex = (): number => markers.length
  /** The current request's dedupe table: a stub whose target is gone counts as full. */
  const currentTable = (): { table: DedupeTable; shown: string[] } => {
    const table = new DedupeTable()
    const shown: string[] = []
    for (const result of results) {
      if (result.request !== requestIndex()) continue
      const { rendering } = result
      const full: FullRendering =
        rendering.stub && !table.has(rendering.stub.target) ? rendering.stub.full : rendering
      if (full.entry) table.add(full.entry)
      shown.push(full.text)
    }
    return { table, shown }
  }

  steps.forEach((step, index) => {
    switch (step.op) {
      case 'reply':
      case 'compaction': {
        if (step.op === 'compaction') {
          const since = markers.findLast((marker) => marker.kind === 'compaction')?.step ?? -1
          const reads = results
            .filter((result) => result.step > since)
            .map((result) => (result.rendering.stub ? undefined : result.rendering.read))
            .filter((read) => read !== undefined)
          const table = renderCompactionTable(reads, rules) ?? null
          produced.push({
            step: index,
            actual: table,
            expected: step.expect === null ? null : expandText(step.expect),
          })
        }
        markers.push({ step: index, kind: step.op })
        return
      }
      case 'rewind':
        results = results.filter((result) => result.step < step.keep)
        markers = markers.filter((marker) => marker.step < step.keep)
        return
      case 'prune': {
        const at = results.findIndex((result) => result.step === step.at)
        const pruned = results[at]
        if (!pruned) throw new Error(`prune: step ${step.at} has no result`)
        // Its turn is still in the history: a full read it was still counts for the table.
        const read = pruned.rendering.stub ? undefined : pruned.rendering.read
        results[at] = {
          ...pruned,
          rendering: { text: renderRewritten(pruned.number, step.text, rules), read },
        }
        return
      }
      case 'advance': {
        // Moves the session on to an id, as if results the case does not show came before.
        const to = parseId(step.to) ?? 0
        if (to < nextNumber) throw new Error(`advance to ${step.to} would reuse ids`)
        nextNumber = to
        return
      }
      case 'request':
        produced.push({
          step: index,
          actual: currentTable().shown.join('\n---\n'),
          expected: step.expect.map(expandText).join('\n---\n'),
        })
        return
      case 'recall': {
        const number = nextNumber++
        const targetNumber = parseId(step.args.id)
        const target =
          targetNumber === undefined
            ? '#' + step.args.id.replace(/^#/, '')
            : formatId(targetNumber, rules.ids.digits)
        const text = renderRecall(
          {
            id: formatId(number, rules.ids.digits),
            target,
            stored: targetNumber === undefined ? undefined : stored.get(targetNumber),
            offset: step.args.offset,
            limit: step.args.limit,
          },
          rules,
        )
        stored.set(number, text)
        results.push({ step: index, number, rendering: { text }, request: requestIndex() })
        produced.push({ step: index, actual: text, expected: expandText(step.expect) })
        return
      }
      default: {
        const number = nextNumber++
        const { call, text } = toCall(step)
        const rendering = renderResult({ number, call, text }, currentTable().table, rules)
        stored.set(number, rendering.stored ?? text)
        results.push({ step: index, number, rendering, request: requestIndex() })
        produced.push({ step: index, actual: rendering.text, expected: expandText(step.expect) })
      }
    }
  })
  return produced
}

function absolute(path: string, abs: string | undefined): string {
  return abs ?? (path.startsWith('/') ? posix.normalize(path) : posix.join('/work', path))
}

function fullSha(sha: string): string {
  return sha.padEnd(64, '0')
}

function toChange(change: {
  path: string
  abs?: string | undefined
  before: TextSpec | null
  after: TextSpec | null
  sha?: string | undefined
}): FileChange {
  const after = change.after === null ? null : expandText(change.after)
  return {
    path: change.path,
    absPath: absolute(change.path, change.abs),
    before: change.before === null ? null : expandText(change.before),
    after,
    ...(change.sha ? { sha256: fullSha(change.sha) } : {}),
  }
}

type ResultStep = Exclude<
  Step,
  { op: 'reply' | 'compaction' | 'rewind' | 'advance' | 'recall' | 'request' | 'prune' }
>

function toCall(step: ResultStep): { call: SemanticCall; text: string } {
  switch (step.op) {
    case 'read': {
      const text = expandText(step.result)
      const absPath = absolute(step.path, step.abs)
      if (step.blind) {
        const shown = splitLines(text).lines
        const [start, end] = step.lines ?? [1, shown.length]
        return {
          call: { kind: 'read', path: step.path, absPath, start, end, shown, ...step.blind },
          text,
        }
      }
      if (!step.file) throw new Error('a read needs file facts or blind')
      const file =
        'content' in step.file
          ? (() => {
              const content = expandText(step.file.content)
              return { lines: splitLines(content).lines.length, sha256: sha256Hex(content) }
            })()
          : { lines: step.file.lines, sha256: fullSha(step.file.sha) }
      const [start, end] = step.lines ?? [1, file.lines]
      return { call: { kind: 'read', path: step.path, absPath, start, end, file }, text }
    }
    case 'edit':
      return {
        call: { kind: 'edit', ...toChange(step), ...(step.note ? { note: step.note } : {}) },
        text: step.result ? expandText(step.result) : '',
      }
    case 'patch':
      return {
        call: {
          kind: 'patch',
          files: step.files.map(toChange),
          ...(step.note ? { note: step.note } : {}),
        },
        text: step.result ? expandText(step.result) : '',
      }
    case 'other':
      return { call: { kind: 'other' }, text: expandText(step.result) }
    default:
      return {
        call: { kind: 'listing', group: step.op, name: step.name ?? step.op, args: step.args },
        text: expandText(step.result),
      }
  }
}
