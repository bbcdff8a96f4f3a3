import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { z } from 'zod'
import { LembasError } from '../errors.js'

/** Every flag, its env twin, its default and what it means: the one source of --help. */
export const FLAGS = {
  host: {
    env: 'LEMBAS_HOST',
    default: '127.0.0.1',
    help: 'address to listen on (loopback by default)',
  },
  port: { env: 'LEMBAS_PORT', default: '8788', help: 'port to listen on' },
  upstream: {
    env: 'LEMBAS_UPSTREAM',
    default: 'http://127.0.0.1:8080/v1',
    help: 'OpenAI-compatible base URL to forward to (llama.cpp default)',
  },
  'upstream-messages': {
    env: 'LEMBAS_UPSTREAM_MESSAGES',
    default: '',
    help: 'base URL for /v1/messages (Claude Code: https://api.anthropic.com/v1); default --upstream',
  },
  'upstream-responses': {
    env: 'LEMBAS_UPSTREAM_RESPONSES',
    default: '',
    help: 'base URL for /v1/responses (Codex CLI: https://api.openai.com/v1); default --upstream',
  },
  store: {
    env: 'LEMBAS_STORE',
    default: '',
    help: 'sqlite:PATH (default: a file under the state dir), redis://HOST:PORT, or memory:',
  },
  workspace: {
    env: 'LEMBAS_WORKSPACE',
    default: '',
    help: 'directory whose files the agent reads (repeatable; env: colon-separated); enables exact read brackets',
  },
  'session-header': {
    env: 'LEMBAS_SESSION_HEADER',
    default: 'x-session-id',
    help: 'request header that names a session (tried before the headers agents send themselves)',
  },
  'compaction-header': {
    env: 'LEMBAS_COMPACTION_HEADER',
    default: 'x-lembas-compaction',
    help: 'request header saying the history was just summarised: a message index, or true',
  },
  'upstream-timeout-ms': {
    env: 'LEMBAS_UPSTREAM_TIMEOUT_MS',
    default: '600000',
    help: 'how long to wait for the upstream to answer or to send the next chunk',
  },
  'upstream-keepalive-ms': {
    env: 'LEMBAS_UPSTREAM_KEEPALIVE_MS',
    default: '1000',
    help: "how long an idle upstream connection is kept for reuse (below the upstream's idle timeout)",
  },
  'stop-grace-s': {
    env: 'LEMBAS_STOP_GRACE_S',
    default: '10',
    help: "on a stop signal, requests under way have this long to finish (a second Ctrl-C: none); then each gets an error in its API's shape",
  },
  'max-connections': {
    env: 'LEMBAS_MAX_CONNECTIONS',
    default: '512',
    help: 'open client connections at most; beyond, new ones are closed at once (and logged)',
  },
  'header-timeout-ms': {
    env: 'LEMBAS_HEADER_TIMEOUT_MS',
    default: '30000',
    help: 'a client connection that has not sent a whole request head in this time is closed',
  },
  stats: {
    env: 'LEMBAS_STATS',
    default: 'store',
    help: 'store: /stats figures go on over a restart (kept in the store every 10 s); memory: from zero',
  },
  'store-cache-mb': {
    env: 'LEMBAS_STORE_CACHE_MB',
    default: '4',
    help: 'memory for stored values read once and reused, and short values written (least recently used dropped first)',
  },
  'splice-cache-mb': {
    env: 'LEMBAS_SPLICE_CACHE_MB',
    default: '64',
    help: 'memory for what the fast path remembers of recent sessions (a few KB to a few hundred KB each), so a next request parses only what is new',
  },
  'save-states-s': {
    env: 'LEMBAS_SAVE_STATES_S',
    default: '30',
    help: "seconds between saves of what the fast path remembers of each active session to the store, so that a process that did not serve a session's last request (after a crash, another replica, another worker) parses only what came since (0: never)",
  },
  'cold-bodies-mb': {
    env: 'LEMBAS_COLD_BODIES_MB',
    default: '1',
    help: 'memory for bodies of requests no session here goes on from yet (new sessions, after a restart), parsed whole: more wait (one body always fits)',
  },
  'cold-collect-kb': {
    env: 'LEMBAS_COLD_COLLECT_KB',
    default: '256',
    help: 'after answering such a request whose body was at least this large, one full garbage collection, so its garbage does not pile up (0: never)',
  },
  'memo-entries': {
    env: 'LEMBAS_MEMO_ENTRIES',
    default: '10000',
    help: "entries in each of the process's small memos (a key's tenant, sessions listed, heads written), least recently used dropped first",
  },
  'stats-sessions': {
    env: 'LEMBAS_STATS_SESSIONS',
    default: '500',
    help: 'sessions /stats and the dashboard list, least recently active dropped first',
  },
  'idle-collect-ms': {
    env: 'LEMBAS_IDLE_COLLECT_MS',
    default: '5000',
    help: 'after 32 MB of request bodies, once none has been in flight this long, one full garbage collection gives the memory back (0: never)',
  },
  'heap-growth-percent': {
    env: 'LEMBAS_HEAP_GROWTH_PERCENT',
    default: '200',
    help: "how far V8 lets its old space grow past what is live before it collects it, in percent (0: V8's own rule, which on a small heap collects it every few large requests once the process has paused)",
  },
  'semi-space-mb': {
    env: 'LEMBAS_SEMI_SPACE_MB',
    default: '16',
    help: "V8's young generation, in MB a semi-space (Node 20's own: 16; Node 24 and 26 grow it to 64 and 32, and peak higher for it): on Node 24 and 26 the process starts itself again with node's --max-semi-space-size, unless node was given one (0: V8's own)",
  },
  'max-body-mb': {
    env: 'LEMBAS_MAX_BODY_MB',
    default: '64',
    help: 'largest request body accepted (413 beyond)',
  },
  'idle-ttl-days': {
    env: 'LEMBAS_IDLE_TTL_DAYS',
    default: '30',
    help: 'drop a session after this long unused',
  },
  'log-level': {
    env: 'LEMBAS_LOG_LEVEL',
    default: 'info',
    help: 'debug, info, warn, error or silent',
  },
  record: {
    env: 'LEMBAS_RECORD',
    default: '',
    help: 'directory to append each request of every door to, as received and as sent (JSONL, no headers, keys redacted); see lembas-proxy replay',
  },
  workers: {
    env: 'LEMBAS_WORKERS',
    default: '1',
    help: "processes that serve the port together on the shared store (sqlite or redis): a number, or 'auto' for one per CPU; more than one when one core is the limit",
  },
  observe: {
    env: 'LEMBAS_OBSERVE',
    default: 'false',
    help: 'a first day without risk: every request goes upstream exactly as the agent sent it (no prompt block, no recall tool); the proxy shapes it in shadow and /stats and the dashboard show what it would save',
  },
  elide: {
    env: 'LEMBAS_ELIDE',
    default: 'false',
    help: 'beyond spec 3.0.0: replace old tool results in batches by a one-line stand-in (recall shows them), when a batch pays by the rule in the README',
  },
  'elide-inputs': {
    env: 'LEMBAS_ELIDE_INPUTS',
    default: 'false',
    help: "with --elide: a batch also replaces the long strings of its results' calls (a file written whole, a long script) by a stand-in; recall of the id shows them",
  },
  'elide-threshold': {
    env: 'LEMBAS_ELIDE_THRESHOLD',
    default: '30',
    help: 'with --elide: tokens of old results (all but the last --elide-keep) that make a batch worth weighing',
  },
  'elide-keep': {
    env: 'LEMBAS_ELIDE_KEEP',
    default: '1',
    help: 'with --elide: the most recent results, never elided',
  },
  'elide-horizon': {
    env: 'LEMBAS_ELIDE_HORIZON',
    default: '200',
    help: 'with --elide: how many later requests a batch is expected to pay over',
  },
  'price-per-mtok': {
    env: 'LEMBAS_PRICE_PER_MTOK',
    default: '',
    help: "your upstream's price of a million input tokens in dollars (e.g. 3): /stats and the dashboard then show the money saved",
  },
  'cached-discount': {
    env: 'LEMBAS_CACHED_DISCOUNT',
    default: '0.9',
    help: 'with --elide and --price-per-mtok: the share the upstream takes off a cached input token (0.9: a tenth of the price)',
  },
  'cache-write-premium': {
    env: 'LEMBAS_CACHE_WRITE_PREMIUM',
    default: '0',
    help: 'with --elide and --price-per-mtok: what writing the prompt cache costs on top of an input token (Anthropic: 0.25)',
  },
  auth: {
    env: 'LEMBAS_AUTH',
    default: '',
    help: 'a shared secret: every request but GET /healthz must send it in the x-lembas-auth header (else 401); never forwarded',
  },
  'allowed-hosts': {
    env: 'LEMBAS_ALLOWED_HOSTS',
    default: '',
    help: "names besides this machine's a request's Host may carry (comma-separated; .example.com: it and below; * any). On loopback others are refused (DNS rebinding); beyond it only when given",
  },
} as const

type FlagName = keyof typeof FLAGS

/** Flags that take no value: given, they are on. */
const BOOLEAN_FLAGS: ReadonlySet<string> = new Set(['elide', 'elide-inputs', 'observe'])

/** A boolean flag's value, from the command line ("true") or the environment. */
const onOff = z
  .string()
  .regex(/^(true|false|1|0|yes|no|on|off)$/i, 'expected true or false')
  .transform((value) => /^(true|1|yes|on)$/i.test(value))

const ConfigSchema = z.object({
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  upstream: z.url({ protocol: /^https?$/ }),
  upstreamMessages: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]),
  upstreamResponses: z.union([z.literal(''), z.url({ protocol: /^https?$/ })]),
  store: z.string(),
  workspace: z.array(z.string().min(1)),
  sessionHeader: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .transform((name) => name.toLowerCase()),
  compactionHeader: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .transform((name) => name.toLowerCase()),
  upstreamTimeoutMs: z.coerce.number().int().positive(),
  upstreamKeepaliveMs: z.coerce.number().int().positive(),
  // A timer holds at most 2^31-1 ms (24.8 days); a longer one would fire at once.
  stopGraceMs: z.coerce
    .number()
    .min(0)
    .transform((seconds) => Math.min(Math.round(seconds * 1000), 2 ** 31 - 1)),
  maxConnections: z.coerce.number().int().positive(),
  headerTimeoutMs: z.coerce.number().int().positive(),
  stats: z.enum(['store', 'memory']),
  storeCacheBytes: z.coerce
    .number()
    .min(0)
    .transform((mb) => Math.round(mb * 1024 * 1024)),
  spliceCacheBytes: z.coerce
    .number()
    .min(0)
    .transform((mb) => Math.round(mb * 1024 * 1024)),
  saveStatesMs: z.coerce
    .number()
    .min(0)
    .transform((seconds) => Math.round(seconds * 1000)),
  coldBodiesBytes: z.coerce
    .number()
    .positive()
    .transform((mb) => Math.round(mb * 1024 * 1024)),
  coldCollectBytes: z.coerce
    .number()
    .min(0)
    .transform((kb) => Math.round(kb * 1024)),
  memoEntries: z.coerce.number().int().min(0),
  statsSessions: z.coerce.number().int().positive(),
  idleCollectMs: z.coerce.number().int().min(0),
  heapGrowthPercent: z.coerce.number().int().min(0).max(1000),
  semiSpaceMb: z.coerce.number().int().min(0).max(1024),
  maxBodyBytes: z.coerce
    .number()
    .positive()
    .transform((mb) => Math.round(mb * 1024 * 1024)),
  idleTtlMs: z.coerce
    .number()
    .positive()
    .transform((days) => Math.round(days * 86_400_000)),
  logLevel: z.enum(['debug', 'info', 'warn', 'error', 'silent']),
  record: z.string(),
  auth: z.string(),
  allowedHosts: z.string().transform((list) =>
    list
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== ''),
  ),
  workers: z
    .string()
    .regex(/^(auto|[1-9][0-9]*)$/, "expected a number of processes (1 or more) or 'auto'")
    .transform((value) => (value === 'auto' ? availableParallelism() : Number(value)))
    .refine((value) => value <= 64, { message: 'expected at most 64 processes' }),
  observe: onOff,
  elide: onOff,
  elideInputs: onOff,
  elideThreshold: z.coerce.number().int().positive(),
  elideKeep: z.coerce.number().int().min(0),
  elideHorizon: z.coerce.number().positive(),
  pricePerMTok: z
    .string()
    .transform((value) => (value.trim() === '' ? undefined : Number(value)))
    .refine((value) => value === undefined || (Number.isFinite(value) && value >= 0), {
      message: 'expected a price in dollars, 0 or more',
    }),
  cachedDiscount: z.coerce.number().min(0).max(1),
  cacheWritePremium: z.coerce.number().min(0),
})

export type Config = z.infer<typeof ConfigSchema>

export type Parsed = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; config: Config }

/** Flags win over env, env over defaults. A bad value stops start-up naming the flag. */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed {
  let parsed
  try {
    parsed = parseArgs({
      args: withNegativeValues(argv),
      options: {
        ...Object.fromEntries(
          Object.keys(FLAGS).map((name) => [
            name,
            // --elide and --observe alone turn them on; the others take a value.
            BOOLEAN_FLAGS.has(name)
              ? { type: 'boolean' }
              : { type: 'string', multiple: name === 'workspace' },
          ]),
        ),
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      } as never,
      allowPositionals: false,
      strict: true,
    })
  } catch (error) {
    throw new LembasError(
      'config_invalid',
      `${(error as Error).message}\nRun lembas-proxy --help for the flags.`,
    )
  }
  const values = parsed.values as Record<string, string | string[] | boolean | undefined>
  if (values.help) return { kind: 'help' }
  if (values.version) return { kind: 'version' }
  const pick = (name: Exclude<FlagName, 'workspace'>): string => {
    const value = values[name]
    if (typeof value === 'string') return value
    if (value === true) return 'true'
    return env[FLAGS[name].env] ?? FLAGS[name].default
  }
  const workspaceFlag = values.workspace
  const workspace = Array.isArray(workspaceFlag)
    ? workspaceFlag
    : (env.LEMBAS_WORKSPACE ?? '').split(':').filter((dir) => dir !== '')
  const result = ConfigSchema.safeParse({
    host: pick('host'),
    port: pick('port'),
    upstream: pick('upstream'),
    upstreamMessages: pick('upstream-messages'),
    upstreamResponses: pick('upstream-responses'),
    store: pick('store'),
    workspace,
    sessionHeader: pick('session-header'),
    compactionHeader: pick('compaction-header'),
    upstreamTimeoutMs: pick('upstream-timeout-ms'),
    upstreamKeepaliveMs: pick('upstream-keepalive-ms'),
    stopGraceMs: pick('stop-grace-s'),
    maxConnections: pick('max-connections'),
    headerTimeoutMs: pick('header-timeout-ms'),
    stats: pick('stats'),
    storeCacheBytes: pick('store-cache-mb'),
    spliceCacheBytes: pick('splice-cache-mb'),
    saveStatesMs: pick('save-states-s'),
    coldBodiesBytes: pick('cold-bodies-mb'),
    coldCollectBytes: pick('cold-collect-kb'),
    memoEntries: pick('memo-entries'),
    statsSessions: pick('stats-sessions'),
    idleCollectMs: pick('idle-collect-ms'),
    heapGrowthPercent: pick('heap-growth-percent'),
    semiSpaceMb: pick('semi-space-mb'),
    maxBodyBytes: pick('max-body-mb'),
    idleTtlMs: pick('idle-ttl-days'),
    logLevel: pick('log-level'),
    record: pick('record'),
    auth: pick('auth'),
    allowedHosts: pick('allowed-hosts'),
    workers: pick('workers'),
    observe: pick('observe'),
    elide: pick('elide'),
    elideInputs: pick('elide-inputs'),
    elideThreshold: pick('elide-threshold'),
    elideKeep: pick('elide-keep'),
    elideHorizon: pick('elide-horizon'),
    pricePerMTok: pick('price-per-mtok'),
    cachedDiscount: pick('cached-discount'),
    cacheWritePremium: pick('cache-write-premium'),
  })
  if (!result.success) {
    const flagOf: Record<string, string> = {
      sessionHeader: 'session-header',
      compactionHeader: 'compaction-header',
      upstreamMessages: 'upstream-messages',
      upstreamResponses: 'upstream-responses',
      upstreamTimeoutMs: 'upstream-timeout-ms',
      upstreamKeepaliveMs: 'upstream-keepalive-ms',
      stopGraceMs: 'stop-grace-s',
      maxConnections: 'max-connections',
      headerTimeoutMs: 'header-timeout-ms',
      storeCacheBytes: 'store-cache-mb',
      spliceCacheBytes: 'splice-cache-mb',
      saveStatesMs: 'save-states-s',
      coldBodiesBytes: 'cold-bodies-mb',
      coldCollectBytes: 'cold-collect-kb',
      memoEntries: 'memo-entries',
      statsSessions: 'stats-sessions',
      idleCollectMs: 'idle-collect-ms',
      heapGrowthPercent: 'heap-growth-percent',
      semiSpaceMb: 'semi-space-mb',
      maxBodyBytes: 'max-body-mb',
      idleTtlMs: 'idle-ttl-days',
      logLevel: 'log-level',
      allowedHosts: 'allowed-hosts',
      elideInputs: 'elide-inputs',
      elideThreshold: 'elide-threshold',
      elideKeep: 'elide-keep',
      elideHorizon: 'elide-horizon',
      pricePerMTok: 'price-per-mtok',
      cachedDiscount: 'cached-discount',
      cacheWritePremium: 'cache-write-premium',
    }
    const problems = result.error.issues.map((issue) => {
      const field = String(issue.path[0] ?? '')
      return `--${flagOf[field] ?? field}: ${plainer(issue.message)}`
    })
    throw new LembasError('config_invalid', problems.join('\n'))
  }
  // --elide-inputs widens what --elide's batches take: alone it would silently do nothing.
  if (result.data.elideInputs && !result.data.elide)
    throw new LembasError(
      'config_invalid',
      '--elide-inputs: works with --elide (LEMBAS_ELIDE=true), which is off; give both',
    )
  return { kind: 'run', config: result.data }
}

/**
 * `--max-body-mb -1` as `--max-body-mb=-1`: node's parser takes a value that starts with a dash
 * for another flag ("argument is ambiguous"), where the value's own check says what is wrong.
 */
function withNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const name = arg.startsWith('--') ? arg.slice(2) : ''
    const next = argv[i + 1]
    if (name in FLAGS && !BOOLEAN_FLAGS.has(name) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`)
      i++
    } else out.push(arg)
  }
  return out
}

/** zod's words for a value that is not a number or not an http(s) URL, in the user's terms. */
function plainer(message: string): string {
  if (/expected number, received NaN/.test(message)) return 'expected a number'
  if (message === 'Invalid URL') return 'expected an http:// or https:// URL'
  return message
}

export function helpText(version: string): string {
  const rows = Object.entries(FLAGS).map(([name, flag]) => {
    const shown = flag.default === '' || BOOLEAN_FLAGS.has(name) ? '' : ` (default ${flag.default})`
    return `  --${name.padEnd(21)} ${flag.help}${shown}\n  ${''.padEnd(23)} env ${flag.env}`
  })
  return [
    `lembas-proxy ${version} — a proxy for coding agents that keeps tool results small without breaking the prompt cache`,
    '(chat completions, the Responses API and the Messages API)',
    '',
    'Usage: lembas-proxy [flags]',
    '       lembas-proxy replay [--json] [--mask-turn user|step] [--cache-write-premium F] FILE[.xz]...',
    '                           (client, proxy, proxy --elide and masked; replay --help for its flags)',
    '       lembas-proxy stats [--url http://127.0.0.1:8788] [--json] [--auth SECRET]',
    '',
    ...rows,
    '  -h, --help              this text',
    '  -v, --version           the version',
    '',
    'Point your agent at the proxy (the README lists every agent):',
    '  OpenAI-compatible agents (opencode, Qwen Code, …)  base URL http://HOST:PORT/v1',
    '  Codex CLI                                           base_url = "http://HOST:PORT/v1"',
    '  Claude Code                                         ANTHROPIC_BASE_URL=http://HOST:PORT',
    'Examples:',
    '  lembas-proxy --upstream http://127.0.0.1:8080/v1 --workspace ~/src/myproject',
    '  lembas-proxy --upstream https://api.openai.com/v1 \\',
    '    --upstream-messages https://api.anthropic.com/v1 --workspace ~/src/myproject',
    '',
  ].join('\n')
}
