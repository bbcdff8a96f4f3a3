/** `lembas-proxy stats [--url URL] [--json]`: a running proxy's GET /stats, as a table. */
import { parseArgs } from 'node:util'
import { LembasError } from '../errors.js'
import type { Figures, StatsSnapshot } from './index.js'

export const STATS_HELP = `Usage: lembas-proxy stats [flags]

Fetches GET /stats from a running lembas-proxy and prints its figures per session and in total.

  --url URL      the proxy (default http://127.0.0.1:8788)
  --auth SECRET  the proxy's --auth secret, sent in x-lembas-auth (default $LEMBAS_AUTH)
  --json         the JSON as the proxy sent it
  -h, --help     this text
`

export async function runStats(
  argv: readonly string[],
  env: Record<string, string | undefined> = process.env,
): Promise<string> {
  let parsed
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        url: { type: 'string', default: 'http://127.0.0.1:8788' },
        auth: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    })
  } catch (error) {
    throw new LembasError('config_invalid', `stats: ${(error as Error).message}`)
  }
  const { values } = parsed
  if (values.help) return STATS_HELP
  const secret = values.auth ?? env.LEMBAS_AUTH
  // The base URL the agents are given ends in /v1; /stats is at the proxy's root.
  const url = values.url.replace(/\/+$/, '').replace(/\/v1$/, '') + '/stats'
  let response: Response
  try {
    response = await fetch(url, { headers: secret ? { 'x-lembas-auth': secret } : {} })
  } catch (error) {
    throw new LembasError(
      'config_invalid',
      `stats: cannot reach ${url}: ${reason(error)} (is lembas-proxy running there? --url names it)`,
    )
  }
  const text = await response.text()
  if (response.status !== 200) {
    const hint =
      response.status === 401
        ? ': the proxy runs with --auth; pass its secret with --auth or $LEMBAS_AUTH'
        : ''
    throw new LembasError('config_invalid', `stats: ${url} answered ${response.status}${hint}`)
  }
  if (values.json) return text.endsWith('\n') ? text : text + '\n'
  return formatStats(JSON.parse(text) as StatsSnapshot)
}

const COLUMNS: readonly [header: string, value: (f: Figures) => string][] = [
  ['requests', (f) => String(f.requests)],
  ['errors', (f) => String(f.upstreamErrors)],
  ['new', (f) => String(f.newResults)],
  ['stubs', (f) => String(f.stubs)],
  ['dedupes', (f) => String(f.dedupes)],
  ['caps', (f) => String(f.caps)],
  ['chars saved', (f) => String(f.charsSaved)],
  ['~tokens saved', (f) => String(f.tokensSavedEstimate)],
  ['~input saved', (f) => String(f.inputTokensSaved ?? 0)],
  ['$ saved', (f) => (f.moneySaved == null ? '-' : f.moneySaved.toFixed(4))],
  ['recalls', (f) => String(f.recalls)],
  ['client breaks', (f) => String(f.clientBreaks ?? 0)],
  ['compactions', (f) => String(f.compactions ?? 0)],
  ['prompt', (f) => String(f.promptTokens)],
  ['cached', (f) => String(f.cachedTokens)],
  ['cached %', (f) => (f.cachedRatio === null ? '-' : (f.cachedRatio * 100).toFixed(1))],
  ['completion', (f) => String(f.completionTokens)],
]

/** One row per session (most recent first) and a total; token savings are chars / 4. */
export function formatStats(snapshot: StatsSnapshot): string {
  const name = (s: StatsSnapshot['sessions'][number]) =>
    s.title ? `${s.title.slice(0, 40)} (${s.session.slice(-8)})` : s.session
  const rows = [
    ['session', ...COLUMNS.map(([header]) => header)],
    ...snapshot.sessions.map((s) => [name(s), ...COLUMNS.map(([, value]) => value(s))]),
    ['total', ...COLUMNS.map(([, value]) => value(snapshot.totals))],
  ]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  const line = (row: string[]) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')
  const observing = snapshot.observe ? ' (observing: what the proxy would save)' : ''
  return (
    `since ${snapshot.since}; ${snapshot.sessions.length} session(s)${observing}\n` +
    rows.map(line).join('\n') +
    '\n(~tokens saved: characters / 4, an estimate, once per new result; ~input saved: what every' +
    '\n request did not carry, less the prompt block and recall tool; $ saved with --price-per-mtok)\n'
  )
}

/** fetch's own message is "fetch failed": the cause (ECONNREFUSED, ENOTFOUND) says why. */
function reason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause
  if (typeof cause?.code === 'string') return cause.code
  return typeof cause?.message === 'string' ? cause.message : (error as Error).message
}
