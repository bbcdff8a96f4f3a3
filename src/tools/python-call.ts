/**
 * Python code that is exactly one call of a function with literal arguments, as agents send
 * their editor skills through a code tool (OpenHands V0's `execute_ipython_cell`:
 * `open_file('/workspace/a.py')`). Anything else — two statements, a variable, an f-string, an
 * expression — is not such a call, and the code is what it is: code.
 */

export type PythonLiteral = string | number | boolean | null

export interface PythonCall {
  readonly name: string
  readonly positional: readonly PythonLiteral[]
  readonly keywords: Readonly<Record<string, PythonLiteral>>
}

/** Longer code is no skill call worth reading (an edit's texts stay well under this). */
const MAX_CODE_CHARS = 1 << 20

/** The call `code` is, or undefined when it is anything more or else. */
export function pythonCall(code: string): PythonCall | undefined {
  if (code.length > MAX_CODE_CHARS) return undefined
  const reader = new Reader(code)
  reader.space()
  const name = reader.identifier()
  if (name === undefined) return undefined
  reader.space()
  if (!reader.take('(')) return undefined
  const positional: PythonLiteral[] = []
  const keywords: Record<string, PythonLiteral> = {}
  for (;;) {
    reader.space()
    if (reader.take(')')) break
    const keyword = reader.keyword()
    // A positional argument after a keyword one is a syntax error in Python.
    if (keyword === undefined && Object.keys(keywords).length > 0) return undefined
    reader.space()
    const value = reader.literal()
    if (value === undefined) return undefined
    if (keyword === undefined) positional.push(value.value)
    // No skill takes `__proto__`; as a plain object's key it would not be one.
    else if (Object.hasOwn(keywords, keyword) || keyword === '__proto__') return undefined
    else keywords[keyword] = value.value
    reader.space()
    if (reader.take(')')) break
    if (!reader.take(',')) return undefined
  }
  reader.space()
  reader.take(';')
  reader.space()
  return reader.done() ? { name, positional, keywords } : undefined
}

/**
 * The call's arguments by name: positional ones take `params` in order, keyword ones their own
 * name. Undefined when more positional arguments come than there are names, or a name twice.
 */
export function namedArguments(
  call: PythonCall,
  params: readonly string[],
): Record<string, PythonLiteral> | undefined {
  if (call.positional.length > params.length) return undefined
  const named: Record<string, PythonLiteral> = {}
  call.positional.forEach((value, i) => (named[params[i]!] = value))
  for (const [name, value] of Object.entries(call.keywords)) {
    if (Object.hasOwn(named, name)) return undefined
    named[name] = value
  }
  return named
}

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y
const INTEGER = /[+-]?(?:0|[1-9][0-9_]*)(?![0-9A-Za-z_.])/y
const STRING_START = /([rRuU]?)('''|"""|'|")/y
const CONSTANTS: Readonly<Record<string, PythonLiteral>> = { None: null, True: true, False: false }

/** Escapes of a Python string (not raw) with one fixed meaning. */
const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\n': '',
}

class Reader {
  #at = 0

  constructor(private readonly text: string) {}

  done(): boolean {
    return this.#at === this.text.length
  }

  take(char: string): boolean {
    if (this.text[this.#at] !== char) return false
    this.#at++
    return true
  }

  /** Spaces and line breaks (inside a call's parentheses Python allows both). */
  space(): void {
    while (/[ \t\r\n]/.test(this.text[this.#at] ?? '')) this.#at++
  }

  identifier(): string | undefined {
    return this.#match(IDENTIFIER)
  }

  /** `name=` before an argument, or undefined (and nothing read) when there is none. */
  keyword(): string | undefined {
    const start = this.#at
    const name = this.identifier()
    if (name !== undefined && !Object.hasOwn(CONSTANTS, name)) {
      this.space()
      // `==` would be a comparison, not a keyword argument.
      if (this.text[this.#at] === '=' && this.text[this.#at + 1] !== '=') {
        this.#at++
        return name
      }
    }
    this.#at = start
    return undefined
  }

  /** One literal: a string (adjacent ones joined, as Python does), an integer, a constant. */
  literal(): { value: PythonLiteral } | undefined {
    const first = this.#string()
    if (first !== undefined) {
      let joined = first
      for (;;) {
        const start = this.#at
        this.space()
        const next = this.#string()
        if (next === undefined) {
          this.#at = start
          return { value: joined }
        }
        joined += next
      }
    }
    const integer = this.#match(INTEGER)
    if (integer !== undefined) {
      const value = Number(integer.replaceAll('_', ''))
      return Number.isSafeInteger(value) ? { value } : undefined
    }
    const name = this.identifier()
    return name !== undefined && Object.hasOwn(CONSTANTS, name)
      ? { value: CONSTANTS[name]! }
      : undefined
  }

  #match(pattern: RegExp): string | undefined {
    pattern.lastIndex = this.#at
    const match = pattern.exec(this.text)
    if (!match) return undefined
    this.#at = pattern.lastIndex
    return match[0]
  }

  /** A string literal's value; undefined (nothing read) when none starts here or it is broken. */
  #string(): string | undefined {
    const start = this.#at
    STRING_START.lastIndex = start
    const opening = STRING_START.exec(this.text)
    if (!opening) return undefined
    const raw = opening[1]!.toLowerCase() === 'r'
    const quote = opening[2]!
    let at = STRING_START.lastIndex
    let value = ''
    for (;;) {
      if (at >= this.text.length) break
      if (this.text.startsWith(quote, at)) {
        this.#at = at + quote.length
        return value
      }
      const char = this.text[at]!
      // A one-quote string ends at its line.
      if (char === '\n' && quote.length === 1) break
      if (char !== '\\') {
        value += char
        at++
        continue
      }
      const escaped = this.#escape(at, raw)
      if (escaped === undefined) break
      value += escaped.text
      at = escaped.next
    }
    this.#at = start
    return undefined
  }

  /** The text a backslash at `at` stands for, and where the string goes on after it. */
  #escape(at: number, raw: boolean): { text: string; next: number } | undefined {
    const next = this.text[at + 1]
    if (next === undefined) return undefined
    // In a raw string a backslash keeps what follows (a quote too) as it is.
    if (raw) return { text: '\\' + next, next: at + 2 }
    const simple = SIMPLE_ESCAPES[next]
    if (simple !== undefined) return { text: simple, next: at + 2 }
    if (next === '\r') {
      const after = this.text[at + 2] === '\n' ? at + 3 : at + 2
      return { text: '', next: after }
    }
    const octal = /^[0-7]{1,3}/.exec(this.text.slice(at + 1, at + 4))
    if (octal)
      return { text: String.fromCodePoint(parseInt(octal[0], 8)), next: at + 1 + octal[0].length }
    const digits = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0
    if (digits > 0) {
      const hex = this.text.slice(at + 2, at + 2 + digits)
      if (!new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(hex)) return undefined
      const code = parseInt(hex, 16)
      return code > 0x10ffff
        ? undefined
        : { text: String.fromCodePoint(code), next: at + 2 + digits }
    }
    // \N{NAME} needs Unicode's name table: such a call is not read.
    if (next === 'N') return undefined
    // Python keeps an unknown escape as it is, backslash and all.
    return { text: '\\' + next, next: at + 2 }
  }
}
