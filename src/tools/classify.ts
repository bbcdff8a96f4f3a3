import type { ToolDefinition } from '../wire/chat.js'
import type { Profile, RangeRule, ToolRule } from './define-profile.js'

/** What a tool call is, by its name and arguments; lines are 1-based inclusive. */
export type Classified =
  | { readonly kind: 'read'; readonly path: string; readonly start: number; readonly end?: number }
  /** A call that changes a file (edit, write); its answer is not yet a diff. */
  | { readonly kind: 'write'; readonly path: string }
  | { readonly kind: 'list' | 'glob' | 'grep' | 'search'; readonly name: string; readonly args: unknown }
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
  const rule = profile.tools.find((tool) => tool.names.includes(name) && matchesWhen(tool, args))
  if (!rule) return OTHER
  if (rule.kind === 'other') return OTHER
  if (rule.kind !== 'read' && rule.kind !== 'write') return { kind: rule.kind, name, args }
  const path = rule.path?.map((arg) => args[arg]).find((value) => typeof value === 'string' && value !== '')
  if (typeof path !== 'string') return OTHER
  if (rule.kind === 'write') return { kind: 'write', path }
  return { kind: 'read', path, ...lineRange(rule.range ?? [], args, definitions.get(name)) }
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
  return !rule.when || args[rule.when.arg] === rule.when.equals
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
      return end === undefined ? { start: Math.max(1, start ?? 1) } : { start: Math.max(1, start ?? 1), end }
    }
    const pair = args[rule.pair]
    if (Array.isArray(pair) && pair.length === 2) {
      const start = wholeNumber(pair[0]) ?? 1
      const end = wholeNumber(pair[1])
      return end === undefined || end < 0 ? { start: Math.max(1, start) } : { start: Math.max(1, start), end }
    }
  }
  return { start: 1 }
}

/** An offset is 0-based when the tool's own schema says so, as Qwen Code's and Crush's do. */
function schemaBase(definition: ToolDefinition | undefined, arg: string): 0 | 1 {
  const parameters = definition?.function?.parameters as
    | { properties?: Record<string, { description?: unknown }> }
    | undefined
  const description = parameters?.properties?.[arg]?.description
  return typeof description === 'string' && /\b(0|zero)-(based|indexed)\b/i.test(description) ? 0 : 1
}

function wholeNumber(value: unknown): number | undefined {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : undefined
}
