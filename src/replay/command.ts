/** `lembas-proxy replay [flags] FILE...`: its flags, and the text it prints. */
import { statSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { LembasError } from '../errors.js'
import type { TurnUnit } from './baseline.js'
import { fileSource } from './input.js'
import { DEFAULT_OPTIONS, replay, type ReplayOptions } from './replay.js'
import { formatReport, reportJson } from './report.js'

export const REPLAY_HELP = `Usage: lembas-proxy replay [flags] FILE...

Replays recorded chat requests through the proxy in this process (memory store, a loopback
upstream that answers "ok"; nothing leaves the machine) and prints, per session and in total,
the input tokens without and with the proxy and with a history-masking baseline, how much of
each request repeats the previous one (what a prompt cache serves), and the price of each.

FILE is a --record file (one {at, session, received, sent} per line; sessions as recorded) or
one chat request body per line (the whole file is one session).

  --json                  machine-readable output
  --price-per-mtok N      dollars per million uncached input tokens (default ${DEFAULT_OPTIONS.pricePerMTok.toFixed(2)})
  --cached-discount F     share taken off a cached input token, 0 to 1 (default ${DEFAULT_OPTIONS.cachedDiscount})
  --mask-keep N           baseline: turns whose tool results are kept (default ${DEFAULT_OPTIONS.mask.keep})
  --mask-turn user|step   baseline: a turn starts at each user message (opencode's pruning), or at
                          each assistant message (observation masking per step) (default ${DEFAULT_OPTIONS.mask.unit})
  -h, --help              this text
`

export interface ReplayCommand {
  readonly files: string[]
  readonly json: boolean
  readonly options: ReplayOptions
}

/** Parses the subcommand's arguments; a bad one is a config_invalid error naming it. */
export function parseReplayArgs(argv: readonly string[]): ReplayCommand | 'help' {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        json: { type: 'boolean' },
        'price-per-mtok': { type: 'string' },
        'cached-discount': { type: 'string' },
        'mask-keep': { type: 'string' },
        'mask-turn': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    })
  } catch (error) {
    throw invalid(`${(error as Error).message}\nRun lembas-proxy replay --help for the flags.`)
  }
  const { values, positionals } = parsed
  if (values.help) return 'help'
  if (positionals.length === 0) throw invalid('replay: give one or more JSONL files')
  const number = (name: string, value: string | undefined, fallback: number, max = Infinity) => {
    if (value === undefined) return fallback
    const n = Number(value)
    if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > max)
      throw invalid(
        `--${name}: expected a number from 0${max === Infinity ? '' : ` to ${max}`}, got ${JSON.stringify(value)}`,
      )
    return n
  }
  const unit = values['mask-turn'] ?? DEFAULT_OPTIONS.mask.unit
  if (unit !== 'user' && unit !== 'step')
    throw invalid(`--mask-turn: expected user or step, got ${JSON.stringify(unit)}`)
  const keep = number('mask-keep', values['mask-keep'], DEFAULT_OPTIONS.mask.keep)
  if (!Number.isInteger(keep)) throw invalid(`--mask-keep: expected a whole number, got ${keep}`)
  return {
    files: positionals,
    json: values.json === true,
    options: {
      pricePerMTok: number(
        'price-per-mtok',
        values['price-per-mtok'],
        DEFAULT_OPTIONS.pricePerMTok,
      ),
      cachedDiscount: number(
        'cached-discount',
        values['cached-discount'],
        DEFAULT_OPTIONS.cachedDiscount,
        1,
      ),
      mask: { keep, unit: unit as TurnUnit },
    },
  }
}

/** Runs the subcommand and returns what it prints. */
export async function runReplay(argv: readonly string[]): Promise<string> {
  const command = parseReplayArgs(argv)
  if (command === 'help') return REPLAY_HELP
  for (const file of command.files) {
    if (!statSync(file, { throwIfNoEntry: false })?.isFile())
      throw invalid(`replay: ${file}: no such file`)
  }
  const report = await replay(command.files.map(fileSource), command.options)
  return command.json ? reportJson(report) : formatReport(report)
}

function invalid(message: string): LembasError {
  return new LembasError('config_invalid', message)
}
