import { posix } from 'node:path'
import type { Classified } from './classify.js'
import { parsePatch, type PatchFile } from './patch.js'

const OTHER: Classified = { kind: 'other' }

/**
 * Shell commands that read a file, search or list, where the command says so unambiguously. A
 * command may run in a directory of its own (`cd DIR && …`, `cd DIR; …`: the path resolves
 * against DIR) and be a pipeline of two: a program that prints the file and one that picks lines.
 *
 * - reads: `cat F`, `cat -n F`, `nl -ba F`, `sed -n 'A,Bp' F` (also `Ap`, `A,$p`),
 *   `head [-n N|-N] F`, `tail [-n N|-N|-n +K] F`, and `cat F`, `cat -n F` or `nl -ba F` piped
 *   into one of `sed -n 'A,Bp'`, `head …`, `tail …`;
 * - `rg …`, `grep …` are searches; `ls …` is a listing (agents without a list tool, Cline 4
 *   and Goose 2026, list with it). A search or a listing is only ever answered "same result
 *   as" when its arguments and its whole output are the same again.
 *
 * Anything else a shell would interpret (redirections, substitutions, globs, `||`, a background
 * `&`, a newline) makes the command "other": its output could be anything.
 */
export function shellCall(command: unknown): Classified {
  const patch = patchOf(command)
  if (patch) return { kind: 'patch', files: patch, shell: true }
  const parsed = parseCommand(command)
  if (!parsed) return OTHER
  const { dir, stages } = parsed
  const [argv, ...more] = stages
  if (argv && more.length === 0) {
    const program = argv[0]
    const args = dir === undefined ? { argv } : { argv, dir }
    if (program === 'rg' || program === 'grep') return { kind: 'grep', name: 'shell', args }
    if (program === 'ls') return { kind: 'list', name: 'shell', args }
  }
  const read = readOf(stages)
  if (!read) return OTHER
  const lines = read.lines
  return {
    kind: 'read',
    // The path as the command gave it (the bracket's); the directory it resolves against.
    path: read.path,
    ...(dir === undefined || posix.isAbsolute(read.path) ? {} : { dir }),
    // A tail's first line is not known from the call: 1 stands in, `tail` says so.
    start: 'start' in lines ? lines.start : 1,
    ...('end' in lines && lines.end !== undefined ? { end: lines.end } : {}),
    ...('last' in lines ? { tail: lines.last } : {}),
    shell: true,
    ...(read.numbered ? { numbered: true } : {}),
  }
}

// `apply_patch <<'EOF'` … `EOF`, as Codex runs a patch through its shell tool.
const PATCH_HEREDOC = /^apply_patch <<-?\s*(['"]?)(\w+)\1\n(?<patch>[\s\S]*?)\n\2\s*$/

/**
 * The files of a patch the command applies: `apply_patch` with the patch as its one argument or
 * in a heredoc (also inside `bash -lc`).
 */
function patchOf(command: unknown): PatchFile[] | undefined {
  let argv = Array.isArray(command) ? command : [command]
  if (argv.length === 3 && /^(ba|z)?sh$/.test(String(argv[0])) && /^-l?c$/.test(String(argv[1])))
    argv = [argv[2]]
  const [first, second, ...more] = argv
  if (typeof first !== 'string' || more.length > 0) return undefined
  const text =
    first === 'apply_patch' && typeof second === 'string'
      ? second
      : second === undefined
        ? PATCH_HEREDOC.exec(first.trim())?.groups?.patch
        : undefined
  const files = text === undefined ? undefined : parsePatch(text)
  return files && files.length > 0 ? files : undefined
}

/** The lines a command prints of a file: `start` to `end` (or to its end), or its `last`. */
type Lines = { readonly start: number; readonly end?: number } | { readonly last: number }

interface ShellRead {
  readonly path: string
  /** The output numbers its lines as `cat -n` does. */
  readonly numbered: boolean
  readonly lines: Lines
}

/** One command that reads a file, or a printer of it piped into a picker of lines. */
function readOf(stages: readonly (readonly string[])[]): ShellRead | undefined {
  const [first, second, ...more] = stages
  if (!first || more.length > 0) return undefined
  const source = printer(first)
  if (!second) {
    if (source) return { ...source, lines: { start: 1 } }
    const picked = picker(first, true)
    return picked?.path === undefined
      ? undefined
      : { path: picked.path, numbered: false, lines: picked.lines }
  }
  const picked = picker(second, false)
  return source && picked ? { ...source, lines: picked.lines } : undefined
}

/** `cat F`, `cat -n F`, `nl -ba F`: the whole file, numbered or not. */
function printer(argv: readonly string[]): { path: string; numbered: boolean } | undefined {
  const [program, ...args] = argv
  const path = args.at(-1)
  if (path === undefined || path.startsWith('-')) return undefined
  const options = args.slice(0, -1).join(' ')
  if (program === 'cat' && (options === '' || options === '-n'))
    return { path, numbered: options === '-n' }
  if (program === 'nl' && options === '-ba') return { path, numbered: true }
  return undefined
}

/** `sed -n 'A,Bp'`, `head`, `tail` with their line arguments; `file`: with the file last. */
function picker(
  argv: readonly string[],
  file: boolean,
): { lines: Lines; path?: string } | undefined {
  const [program, ...args] = argv
  if (program === 'sed') {
    const [flag, script, ...rest] = args
    const range = /^(\d+)(?:,(\d+|\$))?p$/.exec(script ?? '')
    if (flag !== '-n' || !range || !operands(rest, file)) return undefined
    const start = Number(range[1])
    const end = range[2] === undefined ? start : range[2] === '$' ? undefined : Number(range[2])
    return lineRange(start, end, rest[0])
  }
  if (program !== 'head' && program !== 'tail') return undefined
  const counted = countArgs(args)
  if (!counted || !operands(counted.rest, file)) return undefined
  const path = counted.rest[0]
  const { count } = counted
  if (program === 'head') return /^\d+$/.test(count) ? lineRange(1, Number(count), path) : undefined
  if (/^\+\d+$/.test(count)) return lineRange(Number(count.slice(1)), undefined, path)
  if (!/^\d+$/.test(count) || Number(count) < 1) return undefined
  return { lines: { last: Number(count) }, ...(path === undefined ? {} : { path }) }
}

function lineRange(start: number, end: number | undefined, path: string | undefined) {
  if (start < 1 || (end !== undefined && end < start)) return undefined
  const lines: Lines = end === undefined ? { start } : { start, end }
  return { lines, ...(path === undefined ? {} : { path }) }
}

/** `-n N`, `-nN`, `-N` or nothing (10) before the operands. */
function countArgs(
  args: readonly string[],
): { count: string; rest: readonly string[] } | undefined {
  const [first = '', second] = args
  if (first === '-n')
    return second === undefined ? undefined : { count: second, rest: args.slice(2) }
  if (/^-n\+?\d+$/.test(first)) return { count: first.slice(2), rest: args.slice(1) }
  if (/^-\d+$/.test(first)) return { count: first.slice(1), rest: args.slice(1) }
  return { count: '10', rest: args }
}

/** The operands are one file (not an option), or none when the program reads a pipe. */
function operands(rest: readonly string[], file: boolean): boolean {
  return file ? rest.length === 1 && !rest[0]!.startsWith('-') : rest.length === 0
}

/** argv of a plain command (no operators, no `cd`), `bash -lc "…"` unwrapped. */
export function commandArgv(command: unknown): string[] | undefined {
  const parsed = parseCommand(command)
  return parsed && parsed.dir === undefined && parsed.stages.length === 1
    ? [...parsed.stages[0]!]
    : undefined
}

type Word = string | { readonly op: '|' | '&&' | ';' }

interface Parsed {
  /** The directory of a leading `cd DIR &&` or `cd DIR;`. */
  readonly dir?: string
  /** The commands of the pipeline, in order. */
  readonly stages: readonly (readonly string[])[]
}

/** A command string or argv as `[cd DIR (&&|;)] CMD [| CMD …]`; `bash -lc "…"` unwrapped. */
function parseCommand(command: unknown): Parsed | undefined {
  let words: Word[] | undefined
  if (Array.isArray(command)) {
    words = command.every((part) => typeof part === 'string') ? (command as string[]) : undefined
  } else if (typeof command === 'string') {
    words = shellWords(command)
  }
  if (!words || words.length === 0) return undefined
  const [shell, flag, script, ...more] = words
  if (
    more.length === 0 &&
    typeof shell === 'string' &&
    /^(ba|z)?sh$/.test(shell) &&
    typeof flag === 'string' &&
    /^-l?c$/.test(flag) &&
    typeof script === 'string'
  )
    return parseCommand(script)
  let dir: string | undefined
  const [cd, target, after] = words
  if (cd === 'cd' && typeof target === 'string' && typeof after === 'object' && after.op !== '|') {
    if (target.startsWith('-')) return undefined
    dir = target
    words = words.slice(3)
  }
  const stages: string[][] = [[]]
  for (const word of words) {
    if (typeof word === 'string') stages.at(-1)!.push(word)
    else if (word.op === '|') stages.push([])
    else return undefined // a second command: its output is not one command's
  }
  if (stages.some((stage) => stage.length === 0)) return undefined
  return dir === undefined ? { stages } : { dir, stages }
}

/**
 * The words of a command string and its operators `|`, `&&`, `;` (simple quoting only); undefined
 * when anything else a shell would interpret appears outside quotes.
 */
function shellWords(command: string): Word[] | undefined {
  const words: Word[] = []
  let current = ''
  let quote: '"' | "'" | undefined
  let started = false
  const end = () => {
    if (started) words.push(current)
    current = ''
    started = false
  }
  const text = command.trim()
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!
    if (quote) {
      if (char === quote) quote = undefined
      else if (quote === '"' && /[$`\\]/.test(char)) return undefined
      else current += char
    } else if (char === "'" || char === '"') {
      quote = char
      started = true
    } else if (char === '\n') {
      return undefined // a second command
    } else if (/\s/.test(char)) {
      end()
    } else if (char === '|' || char === ';' || (char === '&' && text[i + 1] === '&')) {
      if (text[i + 1] === '|' && char === '|') return undefined // `||`
      end()
      words.push({ op: char === '&' ? '&&' : (char as '|' | ';') })
      if (char === '&') i++
    } else if (/[|&;<>()$`\\*?[\]{}~!#]/.test(char)) {
      return undefined // anything else a shell would interpret: not unambiguous
    } else {
      current += char
      started = true
    }
  }
  if (quote) return undefined
  end()
  return words
}
