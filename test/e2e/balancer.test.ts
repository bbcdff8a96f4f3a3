/**
 * docker/nginx.conf, run by a real nginx in front of two lembas-proxy replicas on one Redis, as
 * docker-compose.yml runs it: a session the agent names sticks to one replica, so only its first
 * request is parsed whole (each replica would parse it whole once), whichever header names it
 * (Codex's `session_id` included, a header nginx drops by default); sessions without a name are
 * spread and still found on either replica; a replica that stops passes its sessions on.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { packageRoot } from '../../src/config/loop.js'
import { shortHash } from '../../src/session/identity.js'
import { startCli, stopCli, upgradeAnswer, type Running } from '../helpers/cli.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { postChat } from '../helpers/proxy.js'
import { startRedis } from '../helpers/redis-server.js'

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  return port
}

/** nginx with docker/nginx.conf, its replicas and its port moved to loopback ports. */
async function startNginx(replicas: readonly number[]) {
  const dir = await mkdtemp(join(tmpdir(), 'lembas-nginx-'))
  // nginx's workers run as nobody when the master is root.
  await chmod(dir, 0o777)
  const port = await freePort()
  const site = (await readFile(packageRoot() + 'docker/nginx.conf', 'utf8'))
    .replace('lembas-1:8788', `127.0.0.1:${replicas[0]}`)
    .replace('lembas-2:8788', `127.0.0.1:${replicas[1]}`)
    .replace(/listen 8788;/, `listen 127.0.0.1:${port};`)
  assert.match(site, new RegExp(`listen 127\\.0\\.0\\.1:${port};`))
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((kind) => `${kind}_temp_path ${join(dir, kind)};`)
    .join('\n')
  const conf = `worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 64; }
http {
access_log off;
${temp}
${site}
}
`
  await writeFile(join(dir, 'nginx.conf'), conf)
  const child: ChildProcess = spawn(
    'nginx',
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  const reap = (): void => void child.kill('SIGKILL')
  process.once('exit', reap)
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`)
    try {
      await fetch(url + '/healthz')
      break
    } catch {
      if (i > 100) throw new Error(`nginx did not listen: ${stderr}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  return {
    url,
    async stop() {
      process.off('exit', reap)
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await once(child, 'exit')
      }
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** A session's request after `steps` results, each one the last plus one call and its result. */
function sessionBody(name: string, steps: number, fields: Record<string, string> = {}) {
  const messages: unknown[] = [{ role: 'user', content: `task ${name}` }]
  for (let i = 1; i <= steps; i++) {
    const id = `call_${name}_${i}`
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'Bash', arguments: '{}' } }],
    })
    messages.push({ role: 'tool', tool_call_id: id, content: `${name} output ${i}\n`.repeat(40) })
  }
  return {
    model: 'm',
    messages,
    tools: [{ type: 'function', function: { name: 'Bash' } }],
    ...fields,
  }
}

interface Line {
  event: string
  session?: string
  spliced?: number
  newResults?: number
}

/** The `request` lines a replica logged so far. */
function requestLines(replica: Running): Line[] {
  return replica
    .stderr()
    .split('\n')
    .filter((line) => line.includes('"event":"request"'))
    .map((line) => JSON.parse(line) as Line)
}

test('nginx keeps each session on one replica, so it goes on the fast way; a stopped replica passes its sessions on', async (t) => {
  const redis = await startRedis()
  const upstream = await startFakeUpstream()
  const env = { LEMBAS_LOG_LEVEL: 'info' }
  const args = ['--port', '0', '--upstream', upstream.url, '--store', redis.url]
  const replicas = [await startCli(args, env), await startCli(args, env)]
  const ports = replicas.map((replica) => Number(new URL(replica.url).port))
  const nginx = await startNginx(ports)
  t.after(async () => {
    await nginx.stop()
    for (const replica of replicas) await stopCli(replica)
    await upstream.close()
    await redis.stop()
  })

  // Sessions named in a header as the agents name them, and two named in the body only (nginx
  // does not see those): seven, so that round robin would not put a session's every request on
  // one replica by chance.
  const sessions: {
    name: string
    headers: Record<string, string>
    fields?: Record<string, string>
  }[] = [
    { name: 'generic', headers: { 'x-session-id': 'generic-1' } },
    { name: 'opencode', headers: { 'x-session-affinity': 'ses_opencode1' } },
    { name: 'codex', headers: { session_id: '0199a1b2-codex-session' } },
    { name: 'goose', headers: { 'x-goose-session-id': 'goose-session-1' } },
    { name: 'claude', headers: { 'x-claude-code-session-id': 'claude-session-1' } },
    { name: 'body-a', headers: {}, fields: { prompt_cache_key: 'body-a' } },
    { name: 'body-b', headers: {}, fields: { prompt_cache_key: 'body-b' } },
  ]
  const steps = 4
  for (let step = 1; step <= steps; step++)
    for (const session of sessions) {
      const body = sessionBody(session.name, step, session.fields)
      const reply = await postChat(nginx.url, body, session.headers)
      assert.equal(reply.status, 200, `${session.name} step ${step}: ${reply.text}`)
    }

  const served = replicas.map(requestLines)
  assert.equal(served[0]!.length + served[1]!.length, sessions.length * steps)
  // Scopes end with the digest of the name lembas knows a session by; Claude Code's header is
  // nginx's only (lembas finds that session by what it carries: the one `/i…` scope).
  const scopeOf = (name: string) => `/e${shortHash(name)}`
  const bodyNamed = ['b:body-a', 'b:body-b'].map(scopeOf)
  const headerNamed = (line: Line) => !bodyNamed.some((end) => line.session?.endsWith(end))
  for (const [i, lines] of served.entries()) {
    for (const scope of new Set(lines.filter(headerNamed).map((line) => line.session))) {
      const own = lines.filter((line) => line.session === scope)
      const elsewhere = served[1 - i]!.filter((line) => line.session === scope)
      assert.equal(elsewhere.length, 0, `session ${scope} served by both replicas`)
      assert.equal(own.length, steps, `every request of ${scope} on replica ${i + 1}`)
      assert.deepEqual(
        own.map((line) => line.spliced),
        [0, 1, 1, 1],
        `${scope}: after the first request, each went on the fast way`,
      )
    }
  }
  assert.equal(
    new Set(
      served
        .flat()
        .filter(headerNamed)
        .map((line) => line.session),
    ).size,
    5,
  )
  for (const end of bodyNamed) {
    const lines = served.flat().filter((line) => line.session?.endsWith(end))
    assert.equal(lines.length, steps, 'a session nginx cannot name is served on either replica')
  }
  assert.ok(
    served.every((lines) => lines.length > 0),
    `both replicas serve sessions: ${served.map((lines) => lines.length).join(' / ')}`,
  )
  // A session named by a header is scoped by that name: Codex's reached the proxy through nginx.
  const codex = scopeOf('h:0199a1b2-codex-session')
  assert.equal(
    served.flat().filter((line) => line.session?.endsWith(codex)).length,
    steps,
    'Codex’s session_id header reached the proxy',
  )

  // Stop the replica that served the generic session: its next request goes to the other.
  const genericScope = scopeOf('h:generic-1')
  const generic = served.findIndex((lines) =>
    lines.some((line) => line.session?.endsWith(genericScope)),
  )
  await stopCli(replicas[generic]!)
  const next = await postChat(nginx.url, sessionBody('generic', steps + 1), sessions[0]!.headers)
  assert.equal(next.status, 200, next.text)
  const after = requestLines(replicas[1 - generic]!).filter((line) =>
    line.session?.endsWith(genericScope),
  )
  assert.equal(after.length, 1, 'the other replica took the session over')
  assert.equal(after[0]!.newResults, 1, 'from the shared store: only the new result is new')

  // A WebSocket upgrade (Codex tries one first) is refused at nginx as a replica refuses it.
  assert.match(await upgradeAnswer(nginx.url), /^HTTP\/1\.1 426 /)
})
