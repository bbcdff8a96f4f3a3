import type { ToolDefinition } from '../wire/chat.js'
import type { EditArgs, Profile, RangeRule, ToolRule } from './define-profile.js'
import { parsePatch, type PatchFile } from './patch.js'
import { shellCall } from './shell.js'

/** One old/new replacement of an edit. */
export interface Replacement {
  readonly old: string
  readonly new: string
  readonly all: boolean
}

/** What a tool call is, by its name and arguments; lines are 1-based inclusive. */
export type Classified =
  | {
      readonly kind: 'read'
      readonly path: string
      readonly start: number
      readonly end?: number
      readonly shell?: boolean
    }
  | { readonly kind: 'edit'; readonly path: string; readonly replacements: readonly Replacement[] }
  | { readonly kind: 'write'; readonly path: string; readonly content?: string }
  | { readonly kind: 'patch'; readonly files: readonly PatchFile[] }
  | {
      readonly kind: 'list' | 'glob' | 'grep' | 'search'
      readonly name: string
      readonly args: unknown
    }
  | { readonly kind: 'other' }

const OTHER: Classified = { kind: 'other' }

export function classifyCall(
  profile: Profile,
  name: string,
  argumentsJson: string,
  definitions: ReadonlyMap<string, ToolDefinition>,
): Classified {
  const args = parseArguments(argumentsJson)
  if (!args) return OTHER
  for (const rule of profile.tools) {
    if (!rule.names.includes(name) || !matchesWhen(rule, args)) continue
    const classified = classifyWith(rule, name, args, definitions.get(name))
    if (classified) return classified
  }
  return OTHER
}

/** The rule's reading of the arguments, or undefined when they are not its shape. */
function classifyWith(
  rule: ToolRule,
  name: string,
  args: Record<string, unknown>,
  definition: ToolDefinition | undefined,
): Classified | undefined {
  const path = firstString(args, rule.path ?? [])
  switch (rule.kind) {
    case 'read':
      return path === undefined
        ? undefined
        : { kind: 'read', path, ...lineRange(rule.range ?? [], args, definition) }
    case 'edit': {
      if (path === undefined) return undefined
      const replacements = replacementsOf(rule.edit ?? [], args)
      return replacements ? { kind: 'edit', path, replacements } : { kind: 'write', path }
    }
    case 'write': {
      if (path === undefined) return undefined
      const content = firstString(args, rule.content ?? [])
      return content === undefined ? { kind: 'write', path } : { kind: 'write', path, content }
    }
    case 'patch': {
      const text = firstString(args, rule.patch ?? [])
      const files = text === undefined ? undefined : parsePatch(text)
      return files && files.length > 0 ? { kind: 'patch', files } : undefined
    }
    case 'shell': {
      const command = args[rule.command?.find((arg) => args[arg] !== undefined) ?? '']
      return shellCall(command)
    }
    default:
      return { kind: rule.kind, name, args }
  }
}

function replacementsOf(
  shapes: readonly EditArgs[],
  args: Record<string, unknown>,
): Replacement[] | undefined {
  for (const shape of shapes) {
    if ('blocks' in shape) {
      const blocks =
        typeof args[shape.blocks] === 'string'
          ? searchReplaceBlocks(args[shape.blocks] as string)
          : undefined
      if (blocks) return blocks
      continue
    }
    const source = shape.list ? args[shape.list] : [args]
    if (!Array.isArray(source) || source.length === 0) continue
    const out: Replacement[] = []
    for (const item of source) {
      if (typeof item !== 'object' || item === null) return undefined
      const edit = item as Record<string, unknown>
      const oldText = edit[shape.old]
      const newText = edit[shape.new]
      if (typeof oldText !== 'string' || typeof newText !== 'string') {
        out.length = 0
        break
      }
      out.push({
        old: oldText,
        new: newText,
        all: shape.all !== undefined && edit[shape.all] === true,
      })
    }
    if (out.length > 0) return out
  }
  return undefined
}

function firstString(args: Record<string, unknown>, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = args[name]
    if (typeof value === 'string' && value !== '') return value
  }
  return undefined
}

function parseArguments(json: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(json === '' ? '{}' : json)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined // a model's broken arguments: the call is "other"
  }
}

function matchesWhen(rule: ToolRule, args: Record<string, unknown>): boolean {
  return !rule.when || rule.when.equals.includes(String(args[rule.when.arg]))
}

function lineRange(
  rules: readonly RangeRule[],
  args: Record<string, unknown>,
  definition: ToolDefinition | undefined,
): { start: number; end?: number } {
  for (const rule of rules) {
    if ('offset' in rule) {
      const offset = wholeNumber(args[rule.offset])
      const limit = wholeNumber(args[rule.limit])
      if (offset === undefined && limit === undefined) continue
      const base = rule.base === 'schema' ? schemaBase(definition, rule.offset) : rule.base
      const start = Math.max(1, (offset ?? base) + (1 - base))
      return limit === undefined ? { start } : { start, end: start + Math.max(0, limit) - 1 }
    }
    if ('start' in rule) {
      const start = wholeNumber(args[rule.start])
      const end = wholeNumber(args[rule.end])
      if (start === undefined && end === undefined) continue
      return end === undefined
        ? { start: Math.max(1, start ?? 1) }
        : { start: Math.max(1, start ?? 1), end }
    }
    const pair = args[rule.pair]
    if (Array.isArray(pair) && pair.length === 2) {
      const start = wholeNumber(pair[0]) ?? 1
      const end = wholeNumber(pair[1])
      return end === undefined || end < 0
        ? { start: Math.max(1, start) }
        : { start: Math.max(1, start), end }
    }
  }
  return { start: 1 }
}

/** An offset is 0-based when the tool's own schema says so, as Qwen Code's and Crush's do. */
function schemaBase(definition: ToolDefinition | undefined, arg: string): 0 | 1 {
  const parameters = definition?.function?.parameters as
    { properties?: Record<string, { description?: unknown }> } | undefined
  const description = parameters?.properties?.[arg]?.description
  return typeof description === 'string' && /\b(0|zero)-(based|indexed)\b/i.test(description)
    ? 0
    : 1
}

function wholeNumber(value: unknown): number | undefined {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : undefined
}

/**
 * SEARCH/REPLACE blocks: Cline's `------- SEARCH` / `=======` / `+++++++ REPLACE` and the
 * `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` form (Roo, with optional `:start_line:` lines).
 */
export function searchReplaceBlocks(text: string): Replacement[] | undefined {
  const pattern =
    /^(?:-{3,} SEARCH|<{3,} SEARCH)\n(?:(?::start_line:\s*\d+\n)?-{3,}\n)?([\s\S]*?)\n?={3,}\n([\s\S]*?)\n?(?:\+{3,} REPLACE|>{3,} REPLACE)$/gm
  const out: Replacement[] = []
  for (const match of text.replace(/\r\n/g, '\n').matchAll(pattern)) {
    out.push({ old: match[1] ?? '', new: match[2] ?? '', all: false })
  }
  return out.length > 0 ? out : undefined
}
