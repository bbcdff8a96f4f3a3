/** `lembas-proxy replay [flags] FILE...`: its flags, and the text it prints. */
import { statSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { LembasError } from '../errors.js'
import type { TurnUnit } from './baseline.js'
import { checkXz, fileSource } from './input.js'
import { DEFAULT_OPTIONS, replay, type ReplayOptions } from './replay.js'
import { formatReport, reportJson } from './report.js'

export const REPLAY_HELP = `Usage: lembas-proxy replay [flags] FILE...

Replays recorded agent requests through the proxy in this process (memory stores, a loopback
upstream that answers "ok" in each API's shape; nothing leaves the machine) and prints, per session and in total,
the input tokens four ways: client (no proxy), proxy (as it runs by default), elided (the proxy
with --elide) and masked (a history-masking baseline); how much of each request repeats the
previous one (what a prompt cache serves), the requests that do not (breaks), and the price.

FILE is a --record file (one {at, door, session, received, sent} per line; sessions as recorded)
or one request body per line (the whole file is one session): Chat Completions, Messages (Claude
Code) or Responses (Codex), told apart by their shape; FILE.xz is read through xz -dc.

  --json                  machine-readable output
  --price-per-mtok N      dollars per million uncached input tokens (default ${DEFAULT_OPTIONS.pricePerMTok.toFixed(2)})
  --cached-discount F     share taken off a cached input token, 0 to 1 (default ${DEFAULT_OPTIONS.cachedDiscount});
                          the elided side's batches weigh it too
  --cache-write-premium F what writing the cache costs on top of an input token (Anthropic: 0.25):
                          uncached tokens are priced at (1 + F) × the price, on every side, and the
                          elided side's batches weigh it (default ${DEFAULT_OPTIONS.cacheWritePremium})
  --elide-threshold N     elided side: tokens of old results that make a batch worth weighing (default ${DEFAULT_OPTIONS.elide.threshold})
  --elide-keep N          elided side: the most recent results, never elided (default ${DEFAULT_OPTIONS.elide.keep})
  --elide-horizon N       elided side: later requests a batch is expected to pay over (default ${DEFAULT_OPTIONS.elide.horizon})
  --elide-inputs          elided side: batches replace their calls' long strings too (a file
                          written whole, a long script)
  --mask-keep N           baseline: turns whose tool results are kept (default ${DEFAULT_OPTIONS.mask.keep})
  --mask-turn user|step   baseline: a turn starts at each user message (opencode's pruning), or at
                          each assistant message (observation masking per step; for agents that
                          send one user message) (default ${DEFAULT_OPTIONS.mask.unit})
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
        'cache-write-premium': { type: 'string' },
        'elide-threshold': { type: 'string' },
        'elide-keep': { type: 'string' },
        'elide-horizon': { type: 'string' },
        'elide-inputs': { type: 'boolean' },
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
  const whole = (name: string, value: string | undefined, fallback: number) => {
    const n = number(name, value, fallback)
    if (!Number.isInteger(n)) throw invalid(`--${name}: expected a whole number, got ${n}`)
    return n
  }
  const positive = (name: string, n: number) => {
    if (n <= 0) throw invalid(`--${name}: expected a number above 0, got ${n}`)
    return n
  }
  const keep = whole('mask-keep', values['mask-keep'], DEFAULT_OPTIONS.mask.keep)
  const elide = DEFAULT_OPTIONS.elide
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
      cacheWritePremium: number(
        'cache-write-premium',
        values['cache-write-premium'],
        DEFAULT_OPTIONS.cacheWritePremium,
      ),
      mask: { keep, unit: unit as TurnUnit },
      elide: {
        threshold: positive(
          'elide-threshold',
          whole('elide-threshold', values['elide-threshold'], elide.threshold),
        ),
        keep: whole('elide-keep', values['elide-keep'], elide.keep),
        horizon: positive(
          'elide-horizon',
          number('elide-horizon', values['elide-horizon'], elide.horizon),
        ),
        inputs: values['elide-inputs'] ?? elide.inputs,
      },
    },
  }
}

/** Runs the subcommand and returns what it prints. */
export async function runReplay(argv: readonly string[]): Promise<string> {
  const command = parseReplayArgs(argv)
  if (command === 'help') return REPLAY_HELP
  for (const file of command.files) {
    const found = statSync(file, { throwIfNoEntry: false })
    if (found?.isDirectory())
      throw invalid(`replay: ${file} is a folder: name its files (${file}/*.jsonl)`)
    if (!found?.isFile()) throw invalid(`replay: ${file}: no such file`)
  }
  const packed = command.files.find((file) => file.endsWith('.xz'))
  if (packed !== undefined) await checkXz(packed)
  const report = await replay(command.files.map(fileSource), command.options)
  // Nothing could be read: a table of zeros would pass for a result.
  if (report.sessions.length === 0) {
    const first = report.skipped[0]
    throw invalid(
      `replay: no session in ${command.files.join(', ')}` +
        (first
          ? ` (${report.skipped.length} line(s) skipped; ${first.file}:${first.line}: ${first.reason})`
          : ': the files hold no request'),
    )
  }
  return command.json ? reportJson(report) : formatReport(report)
}

function invalid(message: string): LembasError {
  return new LembasError('config_invalid', message)
}
