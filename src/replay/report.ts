/** The replay report as text tables (per session, then the total) or as JSON. */
import { keptShare, SIDES, type ReplayReport, type Side, type Totals } from './replay.js'

const LABEL: Record<Side, string> = { client: 'client', proxy: 'proxy', masked: 'masked' }

export function formatReport(report: ReplayReport): string {
  const rows: [string, Totals][] = [
    ...report.sessions.map((session): [string, Totals] => [session.name, session.totals]),
  ]
  if (report.sessions.length !== 1) rows.push(['TOTAL', report.total])
  const { options } = report
  const mask = `tool results older than the last ${options.mask.keep} ${options.mask.unit === 'user' ? 'user turns' : 'agent steps'} cleared`
  const out: string[] = []

  out.push(
    'Input tokens, summed over requests (gpt-tokenizer o200k_base estimate: tools + messages)',
    `  client = as the agent sent it, proxy = as lembas-proxy sent it, masked = ${mask};`,
    '  largest = the largest request, the context window the session needs',
    '',
    table(
      ['session', 'requests', 'client', 'proxy', 'saved', 'masked', 'saved', 'largest c/p/m'],
      rows.map(([name, t]) => [
        name,
        requestsCell(t),
        int(t.sides.client.tokens),
        int(t.sides.proxy.tokens),
        saved(t.sides.client.tokens, t.sides.proxy.tokens),
        int(t.sides.masked.tokens),
        saved(t.sides.client.tokens, t.sides.masked.tokens),
        SIDES.map((s) => int(t.sides[s].largest)).join(' / '),
      ]),
    ),
    '',
    'Prefix stability: kept = share of the previous request repeated at the start of the next',
    '  (1.000 = history byte-identical); breaks = requests that repeat less than all of it;',
    '  cached = share of input tokens that repeat the previous request, which a prompt cache serves',
    '',
    table(
      [
        'session',
        ...SIDES.map((s) => 'kept ' + LABEL[s]),
        'breaks c/p/m',
        ...SIDES.map((s) => 'cached ' + LABEL[s]),
      ],
      rows.map(([name, t]) => [
        name,
        ...SIDES.map((s) => ratio(keptShare(t.sides[s]))),
        SIDES.map((s) => String(t.sides[s].breaks)).join('/'),
        ...SIDES.map((s) =>
          percent(t.sides[s].tokens === 0 ? null : t.sides[s].cached / t.sides[s].tokens),
        ),
      ]),
    ),
    '',
    `What the proxy did to new tool results, and the price of the input at $${options.pricePerMTok.toFixed(2)}/MTok,`,
    `  cached tokens ${Math.round(options.cachedDiscount * 100)}% off`,
    '',
    table(
      [
        'session',
        'results',
        'stubs',
        'dedupes',
        'caps',
        'elided lines',
        'diffs',
        '$ client',
        '$ proxy',
        '$ masked',
        'saved',
      ],
      rows.map(([name, t]) => [
        name,
        int(t.actions.results),
        int(t.actions.stubs),
        int(t.actions.dedupes),
        int(t.actions.caps),
        int(t.actions.elidedLines),
        int(t.actions.diffs),
        dollars(t.sides.client.cost),
        dollars(t.sides.proxy.cost),
        dollars(t.sides.masked.cost),
        saved(t.sides.client.cost, t.sides.proxy.cost),
      ]),
    ),
  )
  const failed = report.sessions.flatMap((session) =>
    session.requests.filter((request) => request.error !== undefined),
  )
  if (failed.length > 0) {
    out.push('', `${failed.length} request(s) failed in the proxy and are left out:`)
    for (const request of failed.slice(0, 10))
      out.push(`  ${request.file}:${request.line}: ${request.error}`)
  }
  if (report.skipped.length > 0) {
    out.push('', `${report.skipped.length} line(s) skipped:`)
    for (const line of report.skipped.slice(0, 10))
      out.push(`  ${line.file}:${line.line}: ${line.reason}`)
  }
  return out.join('\n') + '\n'
}

/** The report as JSON: options, each session with its totals and requests, the total. */
export function reportJson(report: ReplayReport): string {
  const withShares = (t: Totals) => ({
    ...t,
    sides: Object.fromEntries(
      SIDES.map((s) => [
        s,
        {
          ...t.sides[s],
          kept: keptShare(t.sides[s]),
          cachedShare: t.sides[s].tokens === 0 ? null : t.sides[s].cached / t.sides[s].tokens,
        },
      ]),
    ),
  })
  return (
    JSON.stringify(
      {
        options: report.options,
        sessions: report.sessions.map((session) => ({
          name: session.name,
          totals: withShares(session.totals),
          requests: session.requests,
        })),
        total: withShares(report.total),
        skipped: report.skipped,
      },
      null,
      2,
    ) + '\n'
  )
}

function requestsCell(t: Totals): string {
  return t.failed > 0 ? `${t.requests} (+${t.failed} failed)` : String(t.requests)
}

function int(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

function saved(before: number, after: number): string {
  if (before === 0) return '-'
  return (((before - after) / before) * 100).toFixed(1) + '%'
}

function ratio(value: number | null): string {
  return value === null ? '-' : value.toFixed(3)
}

function percent(value: number | null): string {
  return value === null ? '-' : (value * 100).toFixed(1) + '%'
}

function dollars(value: number): string {
  return '$' + value.toFixed(value < 1 ? 4 : 2)
}

/** Columns padded to their widest cell: the first left-aligned, the others right-aligned. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((cell, i) =>
    Math.max(cell.length, ...rows.map((row) => (row[i] ?? '').length)),
  )
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')
}
