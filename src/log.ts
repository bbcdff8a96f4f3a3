import type { Memo } from './memo.js'

/** One JSON line per event on stderr. Never given secrets: callers pass ids and counts only. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 }

export interface Logger {
  debug(event: string, fields?: Record<string, unknown>): void
  info(event: string, fields?: Record<string, unknown>): void
  warn(event: string, fields?: Record<string, unknown>): void
  error(event: string, fields?: Record<string, unknown>): void
}

export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const at =
    (name: Exclude<LogLevel, 'silent'>) => (event: string, fields?: Record<string, unknown>) => {
      if (ORDER[name] < ORDER[level]) return
      write(
        JSON.stringify({ time: new Date().toISOString(), level: name, event, ...fields }) + '\n',
      )
    }
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

export const silentLogger: Logger = createLogger('silent')

/**
 * One warn line per process for each `key` of `event` (a tool, a content coding): what it says
 * holds for every request like it. `warned` remembers the keys, within its bound.
 */
export function warnOnce(
  log: Logger,
  warned: Memo<true>,
  event: string,
  key: string,
  fields: Record<string, unknown>,
): void {
  const seen = `${event}\u0000${key}`
  if (warned.get(seen)) return
  warned.set(seen, true)
  log.warn(event, fields)
}
