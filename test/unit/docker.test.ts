import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { parse } from 'yaml'
import { loadLoop } from '../../src/config/loop.js'

// No Docker engine runs here: the image and the compose stack are checked as files.
const root = new URL('../../', import.meta.url)
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8')

interface Instruction {
  keyword: string
  args: string
  line: number
}

/** Dockerfile instructions: comments dropped, `\` continuations joined, keywords upper-cased. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = []
  let pending = ''
  let start = 0
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim()
    if (pending === '' && (line === '' || line.startsWith('#'))) return
    if (pending !== '' && line.startsWith('#')) return
    if (pending === '') start = index + 1
    const continued = line.endsWith('\\')
    pending += (pending === '' ? '' : ' ') + (continued ? line.slice(0, -1).trim() : line)
    if (continued) return
    const match = /^(\S+)\s*(.*)$/.exec(pending)
    if (match) out.push({ keyword: match[1]!.toUpperCase(), args: match[2]!, line: start })
    pending = ''
  })
  return out
}

/** The instructions from each FROM to the next. */
function stages(all: Instruction[]): Instruction[][] {
  const out: Instruction[][] = []
  for (const instruction of all) {
    if (instruction.keyword === 'FROM') out.push([])
    out.at(-1)?.push(instruction)
  }
  return out
}

/** The hand-written lint: what the production image must be. Returns the problems found. */
function lintDockerfile(text: string): string[] {
  const problems: string[] = []
  const all = instructions(text)
  const byStage = stages(all)
  if (byStage.length === 0) return ['no FROM']
  if (all[0]?.keyword !== 'FROM' && all[0]?.keyword !== 'ARG')
    problems.push('does not start with FROM')
  const stageNames = new Set<string>()
  for (const [from] of byStage) {
    const [image = '', as, name] = from!.args.split(/\s+/)
    if (as?.toUpperCase() === 'AS' && name) stageNames.add(name)
    if (stageNames.has(image)) continue
    const tag = /^[^@]+?(?::([^/:@]+))?(@sha256:[0-9a-f]{64})?$/.exec(image)
    if (!tag?.[1] && !tag?.[2]) problems.push(`line ${from!.line}: ${image} is not pinned to a tag`)
    if (tag?.[1] === 'latest') problems.push(`line ${from!.line}: ${image} uses :latest`)
  }
  for (const add of all.filter((i) => i.keyword === 'ADD')) {
    if (/\bhttps?:\/\//.test(add.args)) problems.push(`line ${add.line}: ADD of a URL`)
  }
  for (const copy of all.filter((i) => i.keyword === 'COPY')) {
    if (/(^|\s)\.\s+\.?\/?$/.test(copy.args))
      problems.push(`line ${copy.line}: COPY of the whole context`)
  }
  const final = byStage.at(-1)!
  const users = final.filter((i) => i.keyword === 'USER')
  const user = users.at(-1)?.args.split(':')[0]
  if (!user) problems.push('final stage: no USER')
  else if (user === 'root' || user === '0') problems.push(`final stage: USER ${user}`)
  const runs = final.filter((i) => i.keyword === 'RUN').map((i) => i.args)
  const ci = runs.find((run) => /\bnpm ci\b/.test(run))
  if (!ci || !/--omit=dev\b/.test(ci)) problems.push('final stage: no `npm ci --omit=dev`')
  else if (!/--ignore-scripts\b/.test(ci))
    problems.push('final stage: `npm ci` would run `prepare` (tsc, a dev dependency)')
  if (runs.some((run) => /\bapt-get install\b/.test(run)))
    problems.push('final stage: apt-get install (build tools belong in the build stage)')
  const health = final.filter((i) => i.keyword === 'HEALTHCHECK')
  if (health.length !== 1) problems.push('final stage: not exactly one HEALTHCHECK')
  else if (!/\/healthz\b/.test(health[0]!.args)) problems.push('HEALTHCHECK does not hit /healthz')
  const expose = final.filter((i) => i.keyword === 'EXPOSE').flatMap((i) => i.args.split(/\s+/))
  if (!expose.some((port) => port.replace(/\/tcp$/, '') === '8788')) problems.push('no EXPOSE 8788')
  const cmd = final.filter((i) => i.keyword === 'CMD').at(-1)
  if (!cmd) problems.push('final stage: no CMD')
  else {
    let argv: unknown
    try {
      argv = JSON.parse(cmd.args)
    } catch {
      problems.push('CMD is not in exec (JSON array) form')
    }
    if (Array.isArray(argv) && !(argv[0] === 'node' && argv[1] === 'dist/src/cli.js'))
      problems.push(`CMD ${cmd.args} does not run node dist/src/cli.js`)
  }
  // Small: the final stage takes only the compiled code, the spec files and production modules.
  const copied = final
    .filter((i) => i.keyword === 'COPY')
    .map((i) =>
      i.args
        .replace(/--\S+\s+/g, '')
        .split(/\s+/)
        .slice(0, -1),
    )
    .flat()
  const allowed = [
    /^package(-lock)?\.json$/,
    /^dist(\/|$)/,
    /^\/app\/dist(\/|$)/,
    /^loop\.json$/,
    /^prompts\/?$/,
    /^\/app\/node_modules\/better-sqlite3\/build\//,
  ]
  for (const source of copied) {
    if (!allowed.some((pattern) => pattern.test(source)))
      problems.push(`final stage copies ${source}`)
  }
  return problems
}

describe('Dockerfile', () => {
  const text = read('Dockerfile')

  test('passes the lint', () => {
    assert.deepEqual(lintDockerfile(text), [])
  })

  test('is multi-stage on the Active LTS line the suite runs on, and takes the compiled better-sqlite3 from the build', () => {
    // .ci/node-versions lists the Active LTS line first; the image runs it in both stages (the
    // native module built in the first must match the second's ABI).
    const firstVersion = read('.ci/node-versions')
      .split('\n')
      .find((line) => /^\d/.test(line))
    const major = firstVersion?.split('.')[0]
    assert.ok(major, '.ci/node-versions names a version')
    const byStage = stages(instructions(text))
    assert.ok(byStage.length >= 2)
    for (const [from] of byStage)
      assert.match(from!.args, new RegExp(`^node:${major}-slim\\b`), `FROM ${from!.args}`)
    const build = byStage[0]!
    const buildCi = build.find((i) => i.keyword === 'RUN' && /\bnpm ci\b/.test(i.args))
    assert.ok(buildCi, 'the build stage runs npm ci (and with it prepare: tsc)')
    assert.doesNotMatch(buildCi.args, /--omit=dev|--ignore-scripts/)
    const final = byStage.at(-1)!
    assert.ok(
      final.some(
        (i) => i.keyword === 'COPY' && /--from=build\b.*better-sqlite3\/build/.test(i.args),
      ),
    )
  })

  test('the lint catches what it is for', () => {
    const bad = [
      'FROM node:latest',
      'ADD https://example.com/x.tgz /x',
      'RUN npm ci',
      'COPY . .',
      'USER root',
      'EXPOSE 3000',
      'CMD node index.js',
    ].join('\n')
    const problems = lintDockerfile(bad).join('\n')
    for (const expected of [
      ':latest',
      'ADD of a URL',
      'COPY of the whole context',
      'USER root',
      '--omit=dev',
      'HEALTHCHECK',
      'EXPOSE 8788',
      'exec (JSON array) form',
    ])
      assert.ok(problems.includes(expected), `expected "${expected}" in:\n${problems}`)
    assert.match(lintDockerfile('FROM node\nUSER node').join('\n'), /not pinned/)
  })
})

describe('.dockerignore', () => {
  test('keeps node_modules, dist, .git and models out of the build context', () => {
    const entries = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
    for (const entry of ['node_modules', 'dist', '.git', 'models'])
      assert.ok(entries.includes(entry))
  })
})

type Service = Record<string, unknown> & {
  image?: string
  build?: unknown
  command?: string[] | string
  environment?: Record<string, string> | string[]
  healthcheck?: { test?: string[] | string }
  depends_on?: Record<string, { condition?: string }> | string[]
  ports?: string[]
  volumes?: string[]
}

const env = (service: Service): Record<string, string> =>
  Array.isArray(service.environment)
    ? Object.fromEntries(
        service.environment.map((pair) => [pair.split('=')[0], pair.split('=').slice(1).join('=')]),
      )
    : Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([key, value]) => [key, String(value)]),
      )
const argv = (command: Service['command']): string =>
  Array.isArray(command) ? command.join(' ') : (command ?? '')

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as {
    services: Record<string, Service>
    volumes?: Record<string, unknown>
  }
  const services = compose.services
  const replicas = ['lembas-1', 'lembas-2']

  test('has redis, two proxy replicas, a balancer and an example llama.cpp server', () => {
    for (const name of ['redis', ...replicas, 'balancer', 'llama']) assert.ok(services[name], name)
  })

  test('redis keeps an append-only file on a named volume and has a healthcheck', () => {
    const redis = services.redis!
    assert.match(redis.image ?? '', /^redis:7-alpine$/)
    assert.match(argv(redis.command), /--appendonly yes\b/)
    const volume = (redis.volumes ?? []).find((v) => v.endsWith(':/data'))
    assert.ok(volume, 'a volume on /data')
    assert.ok(compose.volumes && volume.split(':')[0]! in compose.volumes, 'a named volume')
    assert.match(argv(redis.healthcheck?.test), /redis-cli ping/)
  })

  test('both replicas build this image and share the Redis store', () => {
    for (const name of replicas) {
      const replica = services[name]!
      assert.equal(replica.build, '.', `${name} build`)
      const vars = env(replica)
      assert.equal(vars.LEMBAS_STORE, 'redis://redis:6379', `${name} store`)
      assert.match(vars.LEMBAS_UPSTREAM ?? '', /http:\/\/llama:8080\/v1/)
      assert.equal(vars.LEMBAS_HOST, '0.0.0.0')
      assert.match(vars.LEMBAS_AUTH ?? '', /^\$\{LEMBAS_AUTH(:?-)?[^}]*\}$/, 'auth from the env')
      assert.match(argv(replica.healthcheck?.test), /\/healthz/)
      const depends = replica.depends_on as Record<string, { condition?: string }>
      assert.equal(depends.redis?.condition, 'service_healthy')
      assert.equal(replica.ports, undefined, `${name} is reached only through the balancer`)
    }
  })

  test('the balancer publishes one port and waits for both replicas', () => {
    const balancer = services.balancer!
    assert.match(balancer.image ?? '', /^nginx:[\w.-]*alpine/)
    assert.equal(balancer.ports?.length, 1)
    assert.match(balancer.ports![0]!, /:8788$/)
    assert.ok(balancer.healthcheck?.test)
    const depends = balancer.depends_on as Record<string, { condition?: string }>
    for (const name of replicas) assert.equal(depends[name]?.condition, 'service_healthy')
    assert.ok((balancer.volumes ?? []).some((v) => v.startsWith('./docker/nginx.conf:')))
    const published = Object.entries(services).filter(([, s]) => (s.ports ?? []).length > 0)
    assert.deepEqual(
      published.map(([name]) => name),
      ['balancer'],
    )
  })

  test('llama serves a mounted model on 8080', () => {
    const llama = services.llama!
    assert.match(llama.image ?? '', /^ghcr\.io\/ggml-org\/llama\.cpp:server/)
    const command = argv(llama.command)
    assert.match(command, /-m \/models\/model\.gguf/)
    assert.match(command, /--host 0\.0\.0\.0/)
    assert.match(command, /--port 8080/)
    assert.ok((llama.volumes ?? []).some((v) => /:\/models(:ro)?$/.test(v)))
  })

  test('every image is pinned to a tag', () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.build) continue
      assert.match(service.image ?? '', /:[^/:]+$/, `${name} image tag`)
      assert.doesNotMatch(service.image ?? '', /:latest$/, name)
    }
  })
})

describe('docker/nginx.conf', () => {
  const conf = read('docker/nginx.conf').replace(/#.*$/gm, '')

  test('sends each session to one of both replicas, by the session id the agent sends', () => {
    const upstream = /upstream\s+(\w+)\s*\{([^}]*)\}/.exec(conf)
    assert.ok(upstream, 'an upstream block')
    const servers = [...upstream[2]!.matchAll(/server\s+([\w.-]+:\d+)/g)].map((m) => m[1])
    assert.deepEqual(servers, ['lembas-1:8788', 'lembas-2:8788'])
    const hash = /\bhash\s+\$(\w+)\s+consistent\s*;/.exec(upstream[2]!)
    assert.ok(hash, 'consistent hashing on a session key')
    const map = new RegExp(`map\\s+"([^"]*)"\\s+\\$${hash[1]}\\s*\\{`).exec(conf)
    assert.ok(map, 'the key is mapped from the session headers')
    // Every header loop.json names a session by, and Claude Code's.
    for (const header of [...loadLoop().proxy.sessions.headers, 'x-claude-code-session-id'])
      assert.ok(map[1]!.includes('$http_' + header.replaceAll('-', '_')), header)
    assert.match(conf, /underscores_in_headers\s+on\s*;/, 'Codex’s session_id header passes')
    assert.match(conf, new RegExp(`proxy_pass\\s+http://${upstream[1]}\\s*;`))
  })

  test('streams SSE unbuffered, waits long and takes large bodies', () => {
    assert.match(conf, /listen\s+8788\s*;/)
    assert.match(conf, /proxy_buffering\s+off\s*;/)
    assert.match(conf, /proxy_http_version\s+1\.1\s*;/)
    const read = /proxy_read_timeout\s+(\d+)s\s*;/.exec(conf)
    assert.ok(read && Number(read[1]) >= 600, 'proxy_read_timeout of at least 600s')
    const body = /client_max_body_size\s+(\d+)m\s*;/.exec(conf)
    assert.ok(body && Number(body[1]) >= 64, 'client_max_body_size of at least the proxy default')
  })
})
