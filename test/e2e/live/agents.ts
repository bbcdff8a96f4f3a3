/**
 * The real agent CLIs for the live end-to-end test: where they are installed (outside the repo's
 * dependencies), how to install them, a scratch project and home for each run, and a time-boxed
 * run of the CLI.
 */
import { execFileSync, spawn } from 'node:child_process'
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'

interface AgentPackage {
  readonly name: string
  readonly version: string
  readonly bin: string
  /** Packages installed beside it at the same version (a platform binary). */
  readonly with?: readonly string[]
  /** Its install scripts fetch from the internet: install without them. */
  readonly ignoreScripts?: boolean
}

/** The agent CLIs the tests run for real, at the versions the fixtures were recorded with. */
export const AGENT_PACKAGES = {
  qwen: { name: '@qwen-code/qwen-code', version: '0.24.4', bin: 'qwen' },
  opencode: { name: 'opencode-ai', version: '1.18.33', bin: 'opencode' },
  codex: { name: '@openai/codex', version: '0.171.0', bin: 'codex' },
  claude: { name: '@anthropic-ai/claude-code', version: '2.1.337', bin: 'claude' },
  continue: { name: '@continuedev/cli', version: '1.5.47', bin: 'cn' },
  cline: { name: 'cline', version: '3.0.65', bin: 'cline' },
  kilo: {
    name: '@kilocode/cli',
    version: '7.7.7',
    bin: 'kilo',
    with: ['@kilocode/cli-linux-x64'],
    ignoreScripts: true,
  },
} as const satisfies Record<string, AgentPackage>

export type AgentName = keyof typeof AGENT_PACKAGES

/** $LEMBAS_AGENTS_DIR, else ~/.cache/lembas-agents: an npm prefix holding the CLIs. */
export function agentsDir(): string {
  return process.env['LEMBAS_AGENTS_DIR'] || join(homedir(), '.cache', 'lembas-agents')
}

/** The npm commands that install every pinned CLI into `dir` (one per install-scripts mode). */
export function installCommands(dir = agentsDir()): string[] {
  const all: AgentPackage[] = Object.values(AGENT_PACKAGES)
  return [false, true].flatMap((ignore) => {
    const specs = all
      .filter((p) => (p.ignoreScripts ?? false) === ignore)
      .flatMap((p) => [p.name, ...(p.with ?? [])].map((name) => `${name}@${p.version}`))
    if (specs.length === 0) return []
    const flags = `--no-audit --no-fund --loglevel=error${ignore ? ' --ignore-scripts' : ''}`
    return [`npm install --prefix "${dir}" ${flags} ${specs.join(' ')}`]
  })
}

export function installCommand(dir = agentsDir()): string {
  return installCommands(dir).join(' && ')
}

/**
 * What is wrong with the installed CLI, or undefined when the pinned version is there: the
 * package and each one installed beside it (Kilo's launcher runs whatever platform binary it
 * finds, of any version, so a launcher at the pin could otherwise run an older binary).
 */
export function problem(agent: AgentName, dir = agentsDir()): string | undefined {
  const pkg: AgentPackage = AGENT_PACKAGES[agent]
  const bin = join(dir, 'node_modules', '.bin', pkg.bin)
  if (!existsSync(bin)) return `${pkg.bin} is not installed (no ${bin})`
  for (const name of [pkg.name, ...(pkg.with ?? [])]) {
    const manifest = join(dir, 'node_modules', name, 'package.json')
    const version = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : '?'
    if (version !== pkg.version) return `${name} is ${version}, the test pins ${pkg.version}`
  }
  return undefined
}

let installTried = false

/**
 * The agent's executable. When it is missing the test installs both CLIs once into the cache
 * folder with npm; if that fails too, it throws with the command to run (never a silent skip).
 */
export function agentBinary(agent: AgentName): string {
  const dir = agentsDir()
  if (problem(agent, dir) && !installTried) {
    installTried = true
    try {
      mkdirSync(dir, { recursive: true })
      execFileSync('bash', ['-c', installCommand(dir)], { stdio: 'pipe', timeout: 240_000 })
    } catch {
      // reported below
    }
  }
  const wrong = problem(agent, dir)
  if (wrong) {
    throw new Error(
      `${wrong}. The live agent test runs the real CLIs; install them with:\n  ${installCommand(dir)}\n` +
        `(or set LEMBAS_AGENTS_DIR to an npm prefix that has them; .ci/run installs them)`,
    )
  }
  return join(dir, 'node_modules', '.bin', AGENT_PACKAGES[agent].bin)
}

/** opencode's grep and glob run `rg` from PATH (else it downloads one, which cannot work here). */
export function requireRipgrep(): void {
  const found = (process.env['PATH'] ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, 'rg'), constants.X_OK)
      return true
    } catch {
      return false
    }
  })
  if (!found) throw new Error('opencode needs ripgrep on PATH: apt-get install -y ripgrep')
}

export interface LiveProject {
  /** The workspace (real path): src/big.ts (301 lines), src/util.ts (7 lines), README.md. */
  readonly root: string
  readonly big: string
  readonly util: string
  /** A scratch HOME with XDG folders, outside the workspace. */
  readonly home: string
}

/** A fresh project and home in the temp folder, like the fixtures' make-project.sh. */
export function makeLiveProject(agent: AgentName): LiveProject {
  const base = realpathSync(mkdtempSync(join(tmpdir(), `lembas-live-${agent}-`)))
  const root = join(base, 'project')
  const home = join(base, 'home')
  mkdirSync(join(root, 'src'), { recursive: true })
  for (const dir of ['.config', '.cache', '.local/share', '.local/state'])
    mkdirSync(join(home, dir), { recursive: true })
  writeFileSync(
    join(root, 'README.md'),
    '# demo project\nA tiny scratch project for the live agent test.\n',
  )
  const util = join(root, 'src', 'util.ts')
  writeFileSync(
    util,
    'export function add(a: number, b: number): number {\n  return a + b;\n}\n\n' +
      'export function mul(a: number, b: number): number {\n  return a * b;\n}\n',
  )
  const lines = [
    '// big.ts: generated module with many small functions',
    'import { add, mul } from "./util";',
    '',
  ]
  for (let i = 1; lines.length < 296; i++) {
    lines.push(
      `/** helper number ${i} */`,
      `export function compute${i}(x: number): number {`,
      `  const y = mul(x, ${i});`,
      `  return add(y, ${i * 7});`,
      '}',
      '',
    )
  }
  lines.push(
    'export function computeTotal(xs: number[]): number {',
    '  return xs.reduce((s, x) => add(s, compute1(x)), 0);',
    '}',
    '// end of big.ts',
  )
  const big = join(root, 'src', 'big.ts')
  writeFileSync(big, lines.join('\n') + '\n')
  return { root, big, util, home }
}

/** HOME and XDG_* pointing into the scratch home, PATH kept, nothing else of ours inherited. */
export function isolatedEnv(
  home: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TMPDIR: tmpdir(),
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    ...extra,
  }
}

/** opencode's (and Kilo's) config: one OpenAI-compatible provider at the proxy, all allowed. */
export function openaiCompatibleConfig(baseUrl: string): object {
  return opencodeSettings('live/live-model', {
    live: {
      npm: '@ai-sdk/openai-compatible',
      name: 'Live test',
      options: { baseURL: baseUrl, apiKey: 'live-key' },
      models: {
        'live-model': {
          name: 'Live Model',
          tool_call: true,
          limit: { context: 200000, output: 8192 },
        },
      },
    },
  })
}

/** An opencode (or Kilo) config: `model` of `provider`, every permission given, nothing shared. */
export function opencodeSettings(model: string, provider: object): object {
  return {
    autoupdate: false,
    share: 'disabled',
    model,
    small_model: model,
    permission: { edit: 'allow', bash: 'allow', webfetch: 'allow', external_directory: 'allow' },
    provider,
  }
}

/** opencode and Kilo (built on it): their config file and environment, alike but for names. */
const OPENCODE_LIKE = {
  opencode: { config: 'opencode.json', env: 'OPENCODE', own: {} },
  kilo: { config: 'kilo.json', env: 'KILO', own: { KILO_NO_DAEMON: '1' } },
} as const

/**
 * `opencode run` (or `kilo run`) headless on one task, its config written into the home (an
 * OpenAI-compatible provider at `baseUrl` unless given).
 */
export function opencodeCommand(
  baseUrl: string,
  project: LiveProject,
  task: string,
  agent: keyof typeof OPENCODE_LIKE = 'opencode',
  settings: object = openaiCompatibleConfig(baseUrl),
): { args: string[]; env: Record<string, string> } {
  const { env, own } = OPENCODE_LIKE[agent]
  const config = join(project.home, OPENCODE_LIKE[agent].config)
  writeFileSync(config, JSON.stringify(settings))
  return {
    args: ['run', '--print-logs', '--log-level', 'WARN', '--auto', task],
    env: isolatedEnv(project.home, {
      [`${env}_CONFIG`]: config,
      ...own,
      [`${env}_DISABLE_MODELS_FETCH`]: '1',
      [`${env}_DISABLE_AUTOUPDATE`]: '1',
      [`${env}_DISABLE_SHARE`]: '1',
      [`${env}_DISABLE_LSP_DOWNLOAD`]: '1',
    }),
  }
}

/**
 * The Continue CLI's config in the scratch home: one OpenAI-compatible model at `baseUrl`, with
 * `extra` lines of its model entry (completion options).
 */
export function continueConfig(
  baseUrl: string,
  project: LiveProject,
  extra: readonly string[] = [],
): string {
  const config = join(project.home, 'config.yaml')
  const model = [
    '  - name: live-model',
    '    provider: openai',
    '    model: live-model',
    `    apiBase: ${baseUrl}`,
    '    apiKey: live-key',
    '    roles: [chat, edit, apply]',
    ...extra,
  ]
  writeFileSync(
    config,
    ['name: live', 'version: 1.0.0', 'schema: v1', 'models:', ...model, ''].join('\n'),
  )
  return config
}

/** Qwen Code's flags for an OpenAI-compatible server at `baseUrl`, every tool approved. */
export function qwenFlags(baseUrl: string): string[] {
  return [
    '--auth-type',
    'openai',
    '--openai-base-url',
    baseUrl,
    '--openai-api-key',
    'live-key',
    '-m',
    'live-model',
    '--yolo',
  ]
}

/** Claude Code run headless against `baseUrl`: no telemetry, no updates, no permission prompts. */
export function claudeCodeEnv(home: string, baseUrl: string): Record<string, string> {
  return isolatedEnv(home, {
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: 'live-key',
    IS_SANDBOX: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
  })
}

export interface AgentRun {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly timedOut: boolean
  /** Why the run was stopped early through `stop`, if it was. */
  readonly stopped?: string
  readonly ms: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * Lines for a CLI's standard input (a stream-json session): the first at once, each next one
 * when the CLI's output shows `answered` (its end of a turn); then the input ends.
 */
export interface AgentInput {
  readonly lines: readonly string[]
  readonly answered: RegExp
}

/**
 * Runs the CLI in its own process group; on timeout, or when `stop` aborts (a failure already
 * seen: no use waiting out the agent's retries), the group is killed (SIGKILL after 3 s).
 */
export function runAgent(
  command: string,
  args: readonly string[],
  options: {
    cwd: string
    env: Record<string, string>
    timeoutMs: number
    stop?: AbortSignal
    input?: AgentInput
  },
): Promise<AgentRun> {
  const started = Date.now()
  const input = options.input
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let stdout = ''
    let stderr = ''
    let fed = 0
    const feed = () => {
      if (!input || !child.stdin) return
      if (fed < input.lines.length) child.stdin.write(input.lines[fed++] + '\n')
      else child.stdin.end()
    }
    feed()
    const answers = input && new RegExp(input.answered.source, 'g')
    // Piped both (the input's choice only widens spawn's type).
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      for (let n = answers ? (chunk.match(answers) ?? []).length : 0; n > 0; n--) feed()
    })
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    let timedOut = false
    const kill = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal)
      } catch {
        // already gone
      }
    }
    let hard: NodeJS.Timeout | undefined
    let stopped: string | undefined
    const end = () => {
      if (hard) return
      kill('SIGTERM')
      hard = setTimeout(() => kill('SIGKILL'), 3_000)
    }
    const timer = setTimeout(() => {
      timedOut = true
      end()
    }, options.timeoutMs)
    const onStop = () => {
      stopped = String(options.stop?.reason ?? 'stopped')
      end()
    }
    if (options.stop?.aborted) onStop()
    else options.stop?.addEventListener('abort', onStop, { once: true })
    child.on('error', (error) => {
      clearTimeout(timer)
      options.stop?.removeEventListener('abort', onStop)
      reject(error)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (hard) clearTimeout(hard)
      options.stop?.removeEventListener('abort', onStop)
      kill('SIGKILL') // anything the CLI left behind in its group
      resolve({
        code,
        signal,
        timedOut,
        ...(stopped ? { stopped } : {}),
        ms: Date.now() - started,
        stdout,
        stderr,
      })
    })
  })
}

/** A run's outcome for an assertion message: exit, time, and the tails of its output. */
export function describeRun(run: AgentRun): string {
  const tail = (text: string) => text.split('\n').slice(-25).join('\n')
  return (
    `exit ${run.code ?? run.signal}${run.timedOut ? ' (timed out, killed)' : ''} after ${run.ms} ms\n` +
    (run.stopped ? `stopped early: ${run.stopped}\n` : '') +
    `--- stdout (tail)\n${tail(run.stdout)}\n--- stderr (tail)\n${tail(run.stderr)}`
  )
}
