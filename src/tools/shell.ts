import type { Classified } from './classify.js'

const OTHER: Classified = { kind: 'other' }

/**
 * Shell commands that read a file, search or list, where the command says so unambiguously: one
 * plain command, no pipes, redirections, substitutions or `&&` (the working directory or the
 * output could be anything then). `cat F`, `cat -n F`, `nl -ba F`, `sed -n 'A,Bp' F`,
 * `head -n N F` are reads; `rg …` and `grep …` are searches; `ls …` is a listing (agents without
 * a list tool, Cline 4 and Goose 2026, list with it). A search or a listing is only ever
 * answered "same result as" when its arguments and its whole output are the same again.
 */
export function shellCall(command: unknown): Classified {
  const argv = commandArgv(command)
  if (!argv || argv.length === 0) return OTHER
  const [program, ...args] = argv
  switch (program) {
    case 'cat':
      if (args.length === 1 && !args[0]!.startsWith('-')) return read(args[0]!, 1)
      if (args.length === 2 && args[0] === '-n') return read(args[1]!, 1)
      return OTHER
    case 'nl':
      return args.length === 2 && args[0] === '-ba' ? read(args[1]!, 1) : OTHER
    case 'sed': {
      const script =
        args.length === 3 && args[0] === '-n' ? /^(\d+)(?:,(\d+))?p$/.exec(args[1]!) : null
      if (!script) return OTHER
      const start = Number(script[1])
      return read(args[2]!, start, script[2] === undefined ? start : Number(script[2]))
    }
    case 'head': {
      const count = headCount(args)
      return count ? read(count.path, 1, count.lines) : OTHER
    }
    case 'rg':
    case 'grep':
      return { kind: 'grep', name: 'shell', args: { argv } }
    case 'ls':
      return { kind: 'list', name: 'shell', args: { argv } }
    default:
      return OTHER
  }
}

function read(path: string, start: number, end?: number): Classified {
  if (start < 1 || (end !== undefined && end < start)) return OTHER
  return end === undefined
    ? { kind: 'read', path, start, shell: true }
    : { kind: 'read', path, start, end, shell: true }
}

function headCount(args: readonly string[]): { path: string; lines: number } | undefined {
  if (args.length === 1 && !args[0]!.startsWith('-')) return { path: args[0]!, lines: 10 }
  if (args.length === 3 && args[0] === '-n' && /^\d+$/.test(args[1]!))
    return { path: args[2]!, lines: Number(args[1]) }
  if (args.length === 2 && /^-\d+$/.test(args[0]!))
    return { path: args[1]!, lines: Number(args[0]!.slice(1)) }
  return undefined
}

/** argv from a command string (simple quoting only) or an argv array; `bash -lc "…"` unwrapped. */
export function commandArgv(command: unknown): string[] | undefined {
  if (Array.isArray(command)) {
    if (!command.every((part) => typeof part === 'string')) return undefined
    const parts = command as string[]
    if (parts.length === 3 && /^(ba|z)?sh$/.test(parts[0]!) && /^-l?c$/.test(parts[1]!))
      return commandArgv(parts[2])
    return parts
  }
  if (typeof command !== 'string') return undefined
  const argv: string[] = []
  let current = ''
  let quote: '"' | "'" | undefined
  let started = false
  for (const char of command.trim()) {
    if (quote) {
      if (char === quote) quote = undefined
      else if (quote === '"' && /[$`\\]/.test(char)) return undefined
      else current += char
      continue
    }
    if (char === "'" || char === '"') {
      quote = char
      started = true
    } else if (/\s/.test(char)) {
      if (started) argv.push(current)
      current = ''
      started = false
    } else if (/[|&;<>()$`\\*?[\]{}~!#]/.test(char)) {
      return undefined // anything a shell would interpret: not unambiguous
    } else {
      current += char
      started = true
    }
  }
  if (quote) return undefined
  if (started) argv.push(current)
  if (argv.length === 3 && /^(ba|z)?sh$/.test(argv[0]!) && /^-l?c$/.test(argv[1]!))
    return commandArgv(argv[2])
  return argv
}
