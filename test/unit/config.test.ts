import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { FLAGS, helpText, parseCommandLine } from '../../src/config/flags.js'
import { loadLoop, packageRoot, parseLoop } from '../../src/config/loop.js'
import { ERROR_KINDS } from '../../src/errors.js'

describe('command line', () => {
  test('--help names every flag with its env twin, and where each kind of agent points', () => {
    const help = helpText('9.9.9')
    for (const [name, flag] of Object.entries(FLAGS)) {
      assert.match(help, new RegExp(`--${name} `), name)
      assert.ok(help.includes(`env ${flag.env}`), flag.env)
    }
    // The three doors' settings: a chat agent and Codex below /v1, Claude Code at the root.
    assert.match(help, /base URL http:\/\/HOST:PORT\/v1/)
    assert.match(help, /Codex CLI +base_url = "http:\/\/HOST:PORT\/v1"/)
    assert.match(help, /Claude Code +ANTHROPIC_BASE_URL=http:\/\/HOST:PORT\n/)
    assert.equal(parseCommandLine(['--help'], {}).kind, 'help')
  })

  test('--stop-grace-s: seconds, never below 0, and a very long one waits as long as a timer can', () => {
    const grace = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
      const parsed = parseCommandLine(argv, env)
      return parsed.kind === 'run' ? parsed.config.stopGraceMs : undefined
    }
    assert.equal(grace([]), 10_000)
    assert.equal(grace(['--stop-grace-s', '0.5']), 500)
    assert.equal(grace([], { LEMBAS_STOP_GRACE_S: '30' }), 30_000)
    // 3,000,000 s is past a timer's 2^31-1 ms: node would fire it at once.
    assert.equal(grace(['--stop-grace-s', '3000000']), 2 ** 31 - 1)
    assert.throws(() => parseCommandLine(['--stop-grace-s=-1'], {}), /--stop-grace-s/)
  })

  test('--elide alone turns it on, its twin takes true or false, its settings are checked', () => {
    const config = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
      const parsed = parseCommandLine(argv, env)
      assert.equal(parsed.kind, 'run')
      return parsed.kind === 'run' ? parsed.config : undefined
    }
    assert.equal(config([])?.elide, false, 'off by default')
    assert.equal(config(['--elide'])?.elide, true)
    assert.equal(config([], { LEMBAS_ELIDE: 'true' })?.elide, true)
    assert.equal(config([], { LEMBAS_ELIDE: '0' })?.elide, false)
    const tuned = config(['--elide', '--elide-keep', '3', '--cache-write-premium', '0.25'])
    assert.equal(tuned?.elideKeep, 3)
    assert.equal(tuned?.cacheWritePremium, 0.25)
    assert.equal(tuned?.elideThreshold, Number(FLAGS['elide-threshold'].default))
    assert.throws(() => parseCommandLine([], { LEMBAS_ELIDE: 'maybe' }), /--elide: /)
    assert.throws(() => parseCommandLine(['--elide-keep', '-1'], {}), /--elide-keep/)
    assert.throws(() => parseCommandLine(['--cached-discount', '2'], {}), /--cached-discount/)
    // --elide-inputs widens --elide, off unless given, and never alone.
    assert.equal(config(['--elide'])?.elideInputs, false)
    assert.equal(config(['--elide', '--elide-inputs'])?.elideInputs, true)
    assert.equal(
      config([], { LEMBAS_ELIDE: 'true', LEMBAS_ELIDE_INPUTS: 'true' })?.elideInputs,
      true,
    )
    assert.throws(() => parseCommandLine(['--elide-inputs'], {}), /--elide-inputs: .*--elide/)
  })

  test('defaults, env twins, flags over env', () => {
    const parsed = parseCommandLine([], {})
    assert.equal(parsed.kind, 'run')
    if (parsed.kind !== 'run') return
    assert.equal(parsed.config.host, '127.0.0.1')
    assert.equal(parsed.config.port, 8788)
    assert.equal(parsed.config.upstream, 'http://127.0.0.1:8080/v1')
    assert.equal(parsed.config.sessionHeader, 'x-session-id')
    const env = {
      LEMBAS_PORT: '9000',
      LEMBAS_WORKSPACE: '/a:/b',
      LEMBAS_SESSION_HEADER: 'X-Session-Affinity',
    }
    const fromEnv = parseCommandLine([], env)
    assert.ok(fromEnv.kind === 'run' && fromEnv.config.port === 9000)
    assert.ok(fromEnv.kind === 'run' && fromEnv.config.workspace.join() === '/a,/b')
    assert.ok(fromEnv.kind === 'run' && fromEnv.config.sessionHeader === 'x-session-affinity')
    const flags = parseCommandLine(
      ['--port', '7000', '--workspace', '/c', '--workspace', '/d'],
      env,
    )
    assert.ok(
      flags.kind === 'run' &&
        flags.config.port === 7000 &&
        flags.config.workspace.join() === '/c,/d',
    )
  })
  test('a bad value names its flag; an unknown flag is refused', () => {
    assert.throws(() => parseCommandLine(['--port', 'x'], {}), /: --port: expected a number$/)
    assert.throws(
      () => parseCommandLine(['--upstream', 'ftp://x'], {}),
      /: --upstream: expected an http:\/\/ or https:\/\/ URL$/,
    )
    // A negative value is the flag's, checked as such (node's parser took it for a flag).
    assert.throws(() => parseCommandLine(['--max-body-mb', '-1'], {}), /: --max-body-mb: Too small/)
    assert.throws(() => parseCommandLine(['--bogus'], {}), /bogus/)
  })
})

describe('loop.json', () => {
  test('is valid, and a bad field stops start-up naming it', () => {
    const loop = loadLoop()
    assert.equal(loop.context.cap.max_lines, 400)
    const broken = structuredClone(loop) as any
    broken.context.texts.stub = ''
    assert.throws(() => parseLoop(JSON.stringify(broken)), /context\.texts\.stub/)
    delete broken.context.cap
    assert.throws(() => parseLoop(JSON.stringify(broken)), /context\.cap/)
    assert.throws(() => parseLoop('{'), /not valid JSON/)
  })

  test('a recall text with a placeholder the proxy does not fill stops start-up, not a turn', () => {
    const broken = structuredClone(loadLoop()) as any
    broken.proxy.recall.cut_note = 'offset {nxt} shows the rest'
    assert.throws(() => parseLoop(JSON.stringify(broken)), /proxy\.recall\.cut_note: placeholders/)
  })
})

describe('README', () => {
  const readme = readFileSync(packageRoot() + 'README.md', 'utf8')
  test('documents every flag, its env twin and every error code', () => {
    for (const [name, flag] of Object.entries(FLAGS)) {
      assert.ok(readme.includes(`--${name}`), `--${name}`)
      assert.ok(readme.includes(flag.env), flag.env)
    }
    for (const kind of Object.keys(ERROR_KINDS)) assert.ok(readme.includes('`' + kind + '`'), kind)
  })

  test("the flags table gives each flag's twin and default as the code has them", () => {
    const rows = new Map<string, { env: string; fallback: string }>()
    for (const line of readme.split('\n')) {
      const cells = /^\| `--([a-z-]+)` +\| `([A-Z_]+)`[^|]*\| ([^|]+?) +\|/.exec(line)
      if (cells) rows.set(cells[1]!, { env: cells[2]!, fallback: cells[3]! })
    }
    for (const [name, flag] of Object.entries(FLAGS)) {
      const row = rows.get(name)
      assert.ok(row, `--${name} has a row`)
      assert.equal(row.env, flag.env, name)
      // A literal default is the code's; none and off are its empty and false.
      const literal = /^`([^`]*)`$/.exec(row.fallback)?.[1]
      const shown = literal ?? { none: '', off: 'false' }[row.fallback]
      if (flag.default === '' && shown !== '') continue // derived: `--upstream`, a state folder
      assert.equal(shown, flag.default, `--${name}: ${row.fallback}`)
    }
  })
})
