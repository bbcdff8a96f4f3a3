/** The replay report as text tables (per session, then the total) or as JSON. */
import { keptShare, SIDES, type ReplayReport, type Totals } from './replay.js'

export function formatReport(report: ReplayReport): string {
  const names = displayNames(report)
  const rows: [string, Totals][] = report.sessions.map((session, i) => [names[i]!, session.totals])
  if (report.sessions.length !== 1) rows.push(['TOTAL', report.total])
  const { options } = report
  const mask = `tool results older than the last ${options.mask.keep} ${options.mask.unit === 'user' ? 'user turns' : 'agent steps'} cleared`
  const { threshold, keep, horizon, inputs } = options.elide
  const out: string[] = []

  out.push(
    'Each session four ways: client = as the agent sent it; proxy = as lembas-proxy sends it;',
    `  elided = lembas-proxy --elide (--elide-threshold ${threshold}, --elide-keep ${keep}, --elide-horizon ${horizon}${inputs ? ', --elide-inputs' : ''});`,
    `  masked = ${mask}`,
    'tokens = input tokens summed over requests (gpt-tokenizer o200k_base estimate: tools + messages);',
    '  breaks = requests that repeat less than all of the previous one; kept = share of the previous',
    '  request repeated at the start of the next (1.000 = history byte-identical); cached = share of',
    '  input tokens that repeat the previous request, which a prompt cache serves; largest = the',
    '  largest request, the context window the session needs',
    `$ = the input's price at $${options.pricePerMTok.toFixed(2)}/MTok, cached tokens ${Math.round(options.cachedDiscount * 100)}% off, the others`,
    `  written to the cache at +${Math.round(options.cacheWritePremium * 100)}% (--cache-write-premium)`,
    '',
    groupedTable(
      ['', 'tokens', 'vs client', 'breaks', 'kept', 'cached', 'largest', '$', 'vs client'],
      rows.map(([name, t]) => ({
        title: `${name}, ${requestsCell(t)} request${t.requests === 1 ? '' : 's'}`,
        rows: SIDES.map((side) => {
          const one = t.sides[side]
          const client = t.sides.client
          return [
            '  ' + side,
            int(one.tokens),
            side === 'client' ? '' : change(client.tokens, one.tokens),
            int(one.breaks),
            ratio(keptShare(one)),
            percent(one.tokens === 0 ? null : one.cached / one.tokens),
            int(one.largest),
            dollars(one.cost),
            side === 'client' ? '' : change(client.cost, one.cost),
          ]
        }),
      })),
    ),
    '',
    'What the proxy did to new tool results (stubs: re-reads; dedupes: repeated listings and',
    '  searches; caps: results cut to head and tail, and the lines cut; diffs: edits), and what',
    '  --elide did on the elided side (batches, the results they replaced by a stand-in, and with',
    '  --elide-inputs the calls whose long strings they replaced);',
    "  unrecog.: results of a known agent tool the proxy did not recognise (the agent's output changed);",
    '  client breaks: requests where the agent changed what it had sent before (the proxy never does)',
    '',
    table(
      [
        'session',
        'requests',
        'results',
        'stubs',
        'dedupes',
        'caps',
        'lines cut',
        'diffs',
        'batches',
        'elided',
        'inputs',
        'unrecog.',
        'client breaks',
      ],
      rows.map(([name, t]) => [
        name,
        requestsCell(t),
        int(t.actions.results),
        int(t.actions.stubs),
        int(t.actions.dedupes),
        int(t.actions.caps),
        int(t.actions.elidedLines),
        int(t.actions.diffs),
        int(t.elisions.batches),
        int(t.elisions.results),
        int(t.elisions.inputs),
        int(t.actions.unrecognised),
        int(t.actions.clientBreaks),
      ]),
    ),
  )
  const saved = report.total.actions
  if (saved.savedChars > 0) {
    const estimate = saved.savedChars / 4
    const off = saved.savedTokens > 0 ? (estimate / saved.savedTokens - 1) * 100 : 0
    out.push(
      '',
      `Saved on new results: ${int(saved.savedChars)} characters; /stats estimates ` +
        `${int(Math.round(estimate))} tokens (characters / 4), o200k counts ` +
        `${int(saved.savedTokens)} (the estimate is ${Math.abs(off).toFixed(0)}% ${off >= 0 ? 'over' : 'under'})`,
    )
  }
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

/**
 * The sessions' names without the directory their files share: `opencode/session.jsonl` for
 * test/fixtures/agents/opencode/session.jsonl next to qwen-code's.
 */
function displayNames(report: ReplayReport): string[] {
  const files = report.sessions.map((session) => session.requests[0]?.file ?? '')
  let shared = files[0] ?? ''
  for (const file of files) while (!file.startsWith(shared)) shared = shared.slice(0, -1)
  shared = shared.slice(0, shared.lastIndexOf('/') + 1)
  return report.sessions.map((session) =>
    shared !== '' && session.name.startsWith(shared)
      ? session.name.slice(shared.length)
      : session.name,
  )
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

/** `after` against `before`, as a signed percentage: -12.0% is 12 % less. */
function change(before: number, after: number): string {
  if (before === 0) return '-'
  const share = ((after - before) / before) * 100
  return (share > 0 ? '+' : '') + share.toFixed(1) + '%'
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
  return groupedTable(header, [{ title: undefined, rows }])
}

/** One table whose rows come in groups, each after a line of its own (its title). */
function groupedTable(
  header: string[],
  groups: { title: string | undefined; rows: string[][] }[],
): string {
  const all = groups.flatMap((group) => group.rows)
  const widths = header.map((cell, i) =>
    Math.max(cell.length, ...all.map((row) => (row[i] ?? '').length)),
  )
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...groups.flatMap((group) => [
      ...(group.title === undefined ? [] : [group.title]),
      ...group.rows.map(line),
    ]),
  ].join('\n')
}
