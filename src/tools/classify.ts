import { posix } from 'node:path'
import type { ToolDefinition } from '../wire/chat.js'
import type { EditArgs, JsonResult, Profile, RangeRule, ToolRule } from './define-profile.js'
import { parsePatch, type PatchFile } from './patch.js'
import { namedArguments, pythonCall } from './python-call.js'
import { shellCall } from './shell.js'

/** One change of an edit: old text replaced by new, or text inserted after `at` lines (0 = top). */
export type Replacement =
  | { readonly old: string; readonly new: string; readonly all: boolean }
  | { readonly insert: string; readonly at: number }

/** Where a change's result is JSON around the tool's answer (Cline 4). */
interface JsonWrapped {
  readonly json?: JsonResult
}

/** A read of one file, by its call; lines are 1-based inclusive. */
export type ReadClassified = Extract<Classified, { kind: 'read' }>

/** What a tool call is, by its name and arguments; lines are 1-based inclusive. */
export type Classified =
  | ({
      readonly kind: 'read'
      /** As the call gave it: what a bracket names. */
      readonly path: string
      /** A shell command's own directory (`cd DIR && …`): the path resolves against it. */
      readonly dir?: string
      readonly start: number
      readonly end?: number
      /** A shell command's output: the lines are raw unless `numbered` (`cat -n`, `nl -ba`). */
      readonly shell?: boolean
      readonly numbered?: boolean
      /**
       * The call prints the file's last `tail` lines (`tail -n N`): `start` (1) stands in for a
       * first line only the lines' own numbers or the file's length can tell.
       */
      readonly tail?: number
      /** A final empty numbered line is a line of the file (see ToolRule.realFinalEmpty). */
      readonly realFinalEmpty?: boolean
    } & JsonWrapped)
  | ({
      readonly kind: 'edit'
      readonly path: string
      readonly replacements: readonly Replacement[]
    } & JsonWrapped)
  | ({ readonly kind: 'write'; readonly path: string; readonly content?: string } & JsonWrapped)
  | ({
      readonly kind: 'patch'
      readonly files: readonly PatchFile[]
      /** A shell command ran it (Codex's `apply_patch <<'EOF'`): its answer is in a wrapper. */
      readonly shell?: boolean
      /** The directory the shell ran it in (the tool's `workdir`): its relative paths resolve there. */
      readonly dir?: string
    } & JsonWrapped)
  | ({
      readonly kind: 'list' | 'glob' | 'grep' | 'search'
      readonly name: string
      readonly args: unknown
    } & JsonWrapped)
  | ({
      /** One call that reads several files (Cline 4's read_files), each answered on its own. */
      readonly kind: 'reads'
      readonly files: readonly ReadClassified[]
    } & JsonWrapped)
  | ({ readonly kind: 'other' } & JsonWrapped)

const OTHER: Classified = { kind: 'other' }

export function classifyCall(
  profile: Profile,
  name: string,
  argumentsJson: string,
  definitions: ReadonlyMap<string, ToolDefinition>,
): Classified {
  const args = parseArguments(argumentsJson)
  if (!args) return OTHER
  // Where agents share a read tool's name and path argument (Cline's and Roo's read_file), the
  // rule whose range arguments the call gives wins; without any, the first rule that fits.
  let unranged: Classified | undefined
  for (const rule of profile.tools) {
    if (!rule.names.includes(name) || !matchesWhen(rule, args)) continue
    const classified = classifyWith(rule, name, args, definitions.get(name))
    if (!classified) continue
    if (classified.ranged !== false) return classified.call
    unranged ??= classified.call
  }
  return unranged ?? OTHER
}

interface RuleReading {
  readonly call: Classified
  /** A read: whether the rule found its range arguments in the call. */
  readonly ranged?: boolean
}

/** The rule's reading of the arguments, or undefined when they are not its shape. */
function classifyWith(
  rule: ToolRule,
  name: string,
  callArgs: Record<string, unknown>,
  definition: ToolDefinition | undefined,
): RuleReading | undefined {
  if (rule.item !== undefined && rule.kind === 'read') {
    const items = objects(callArgs[rule.item])
    if (items && items.length > 1) {
      const files = items.map((item) =>
        classifyWith(rule, name, { [rule.item!]: [item] }, definition),
      )
      if (!files.every((file) => file?.call.kind === 'read')) return undefined
      const reads = files.map((file) => file!.call as ReadClassified)
      return { call: { kind: 'reads', files: reads, ...(rule.json ? { json: rule.json } : {}) } }
    }
  }
  const args = rule.code
    ? codeArguments(callArgs[rule.code.arg], rule.code)
    : rule.item === undefined
      ? callArgs
      : onlyItem(callArgs[rule.item])
  if (!args) return undefined
  const path = firstString(args, rule.path ?? [])
  const json = rule.json ? { json: rule.json } : {}
  const reading = (call: Classified): RuleReading => ({ call })
  switch (rule.kind) {
    case 'read': {
      if (path === undefined) return undefined
      const range = lineRange(rule.range ?? [], args, definition)
      const call: Classified = {
        kind: 'read',
        path,
        start: range.start,
        ...(range.end === undefined ? {} : { end: range.end }),
        ...(rule.realFinalEmpty ? { realFinalEmpty: true } : {}),
        ...json,
      }
      return { call, ranged: range.ranged }
    }
    case 'edit':
    case 'write': {
      if (path === undefined) return undefined
      const replacements = rule.kind === 'edit' ? replacementsOf(rule.edit ?? [], args) : undefined
      if (replacements) return reading({ kind: 'edit', path, replacements, ...json })
      // A write, or an edit whose arguments carry the whole content instead (Cline 4 creating).
      const content = firstString(args, rule.content ?? [])
      return reading({
        kind: 'write',
        path,
        ...(content === undefined ? {} : { content }),
        ...json,
      })
    }
    case 'patch': {
      const text = firstString(args, rule.patch ?? [])
      const files = text === undefined ? undefined : parsePatch(text)
      return files && files.length > 0 ? reading({ kind: 'patch', files, ...json }) : undefined
    }
    case 'shell': {
      const command = rule.commands
        ? onlyCommand(args[rule.commands.find((arg) => args[arg] !== undefined) ?? ''])
        : args[rule.command?.find((arg) => args[arg] !== undefined) ?? '']
      const call = inDirectory(shellCall(command), firstString(args, rule.dir ?? []))
      // A read's lines, or a command's output, are inside the JSON answer (Cline 4).
      return reading(call.kind === 'patch' ? call : { ...call, ...json })
    }
    default:
      // Two skills of one code tool with like arguments are not the same listing.
      return reading({
        kind: rule.kind,
        name: rule.code ? `${name}:${rule.code.call}` : name,
        args,
        ...json,
      })
  }
}

/** The arguments of the one call `code` makes, when it is a call of the rule's function. */
function codeArguments(
  code: unknown,
  rule: NonNullable<ToolRule['code']>,
): Record<string, unknown> | undefined {
  const call = typeof code === 'string' ? pythonCall(code) : undefined
  return call?.name === rule.call ? namedArguments(call, rule.params) : undefined
}

/**
 * A shell read or patch run in the directory the tool was given (opencode's `workdir`): a
 * relative path resolves against it, and against a `cd DIR` inside the command after it.
 */
function inDirectory(call: Classified, workdir: string | undefined): Classified {
  if (call.kind === 'patch' && workdir) return { ...call, dir: workdir }
  if (call.kind !== 'read' || !workdir || posix.isAbsolute(call.path)) return call
  const dir =
    call.dir === undefined
      ? workdir
      : posix.isAbsolute(call.dir)
        ? call.dir
        : posix.join(workdir, call.dir)
  return { ...call, dir }
}

/** The one object of a list of one (Cline 4's `files`); a longer list is not one call's file. */
function onlyItem(value: unknown): Record<string, unknown> | undefined {
  const items = objects(value)
  return items?.length === 1 ? items[0] : undefined
}

/** A list of objects (Cline 4's `files`), or undefined when it is anything else. */
function objects(value: unknown): Record<string, unknown>[] | undefined {
  if (!Array.isArray(value)) return undefined
  const items = value as unknown[]
  return items.every((item) => typeof item === 'object' && item !== null && !Array.isArray(item))
    ? (items as Record<string, unknown>[])
    : undefined
}

/** The one command of a list of one (Cline 4's `commands`), as a string. */
function onlyCommand(value: unknown): string | undefined {
  return Array.isArray(value) && value.length === 1 && typeof value[0] === 'string'
    ? value[0]
    : undefined
}

function replacementsOf(
  shapes: readonly EditArgs[],
  args: Record<string, unknown>,
): Replacement[] | undefined {
  for (const shape of shapes) {
    if ('insert' in shape) {
      const text = args[shape.insert]
      const line = wholeNumber(args[shape.line])
      if (typeof text !== 'string' || line === undefined) continue
      const at = shape.base === 'after' ? line : line - 1
      if (at < 0) continue // Goose counts negative lines from the end: not derivable here
      return [{ insert: text, at }]
    }
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

/** A call's arguments as an object; undefined when they are not a JSON object. */
export function parseArguments(json: string): Record<string, unknown> | undefined {
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

/** The lines asked for; `ranged` says whether the call gave one of the rules' range arguments. */
function lineRange(
  rules: readonly RangeRule[],
  args: Record<string, unknown>,
  definition: ToolDefinition | undefined,
): { start: number; end?: number; ranged: boolean } {
  for (const rule of rules) {
    if ('offset' in rule) {
      const offset = wholeNumber(args[rule.offset])
      const limit = wholeNumber(args[rule.limit])
      if (offset === undefined && limit === undefined) continue
      const base = rule.base === 'schema' ? schemaBase(definition, rule.offset) : rule.base
      const start = Math.max(1, (offset ?? base) + (1 - base))
      return limit === undefined
        ? { start, ranged: true }
        : { start, end: start + Math.max(0, limit) - 1, ranged: true }
    }
    if ('start' in rule) {
      const start = wholeNumber(args[rule.start])
      const end = wholeNumber(args[rule.end])
      if (start === undefined && end === undefined) continue
      return end === undefined
        ? { start: Math.max(1, start ?? 1), ranged: true }
        : { start: Math.max(1, start ?? 1), end, ranged: true }
    }
    const pair = args[rule.pair]
    if (Array.isArray(pair) && pair.length === 2) {
      const start = wholeNumber(pair[0]) ?? 1
      const end = wholeNumber(pair[1])
      return end === undefined || end < 0
        ? { start: Math.max(1, start), ranged: true }
        : { start: Math.max(1, start), end, ranged: true }
    }
  }
  return { start: 1, ranged: false }
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
