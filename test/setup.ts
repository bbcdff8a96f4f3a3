/**
 * Run by `npm test` before any test: installs what the tests need that npm ci does not. The
 * pinned agent CLIs go into their cache folder ($LEMBAS_AGENTS_DIR, else ~/.cache/lembas-agents)
 * from npm, once; later runs find them. The system programs (redis-server, rg, chromium, xz) are
 * installed with apt when this is root on Debian or Ubuntu; otherwise it stops with one message
 * that names each missing program and the command that installs it, before any test runs.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { accessSync, constants, mkdirSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import {
  AGENT_PACKAGES,
  agentsDir,
  installCommands,
  problem,
  type AgentName,
} from './e2e/live/agents.js'

/** The programs the tests run, and the Debian package of each. */
const PROGRAMS = [
  { program: 'redis-server', apt: 'redis-server', why: 'the Redis store tests' },
  { program: 'rg', apt: 'ripgrep', why: "opencode's and Kilo's grep and glob" },
  { program: 'chromium', apt: 'chromium', why: 'the dashboard test' },
  { program: 'xz', apt: 'xz-utils', why: 'replay of the shared .xz traces' },
  { program: 'nginx', apt: 'nginx', why: 'the balancer test (docker/nginx.conf)' },
] as const

function onPath(program: string): boolean {
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, program), constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

function say(line: string): void {
  process.stderr.write(`test set-up: ${line}\n`)
}

function systemPrograms(): string[] {
  let missing = PROGRAMS.filter((p) => !onPath(p.program))
  if (missing.length === 0) return []
  const root = process.getuid?.() === 0
  if (root && onPath('apt-get')) {
    const packages = missing.map((p) => p.apt)
    say(`apt-get install ${packages.join(' ')}`)
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env })
    if (update.status === 0)
      spawnSync('apt-get', ['install', '-y', '-qq', ...packages], { stdio: 'inherit', env })
    missing = missing.filter((p) => !onPath(p.program))
  }
  return missing.map(
    (p) =>
      `${p.program} (for ${p.why}): sudo apt-get install -y ${p.apt}, or your system's package`,
  )
}

function agentClis(): string[] {
  const dir = agentsDir()
  const names = Object.keys(AGENT_PACKAGES) as AgentName[]
  if (names.every((name) => problem(name, dir) === undefined)) return []
  try {
    mkdirSync(dir, { recursive: true })
    for (const command of installCommands(dir)) {
      say(command)
      execFileSync('bash', ['-c', command], { stdio: 'inherit', timeout: 600_000 })
    }
  } catch {
    // reported below, per CLI
  }
  const wrong = names.flatMap((name) => problem(name, dir) ?? [])
  if (wrong.length === 0) return []
  return [...wrong, `the agent CLIs install with: ${installCommands(dir).join(' && ')}`]
}

const missing = [...systemPrograms(), ...agentClis()]
if (missing.length > 0) {
  say('the tests need these, and they could not be installed here:')
  for (const line of missing) process.stderr.write(`  - ${line}\n`)
  process.exit(1)
}
