/**
 * Redis store: one hash per scope, `lembas:v1:{<scope>}` (the braces make the scope the Cluster
 * hash tag), holding write-once values, claims, the counter and latest values under the reserved
 * field names of common.ts, so that the one TTL covers them all. ioredis re-sends unanswered
 * commands after a reconnect, so every write is a Lua script that is safe to run twice. The
 * offline queue is off: during an outage calls fail at once with store_unavailable instead of
 * piling up.
 */
import { Redis } from 'ioredis'
import { LembasError } from '../errors.js'
import {
  checkEntries,
  checkIdleTtl,
  checkKeys,
  claimField,
  closedError,
  COUNTER_FIELD,
  kvField,
  latestField,
  redactUrl,
} from './common.js'
import type { Store } from './store.js'

export const KEY_PREFIX = 'lembas:v1:'

export function scopeKey(scope: string): string {
  return `${KEY_PREFIX}{${scope}}`
}

// HSETNX then HGET per entry, from ARGV[first] on. False (nil) where our value won, to spare
// sending back megabytes the caller already has.
const PUT = `
local function put(first)
  local out = {}
  for i = first, #ARGV, 2 do
    if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
      out[#out + 1] = false
    else
      out[#out + 1] = redis.call('HGET', KEYS[1], ARGV[i])
    end
  end
  return out
end
`

// The claim fields ARGV[first..last] get numbers; ARGV[2] is the counter field. A field already
// claimed keeps its number; a new one none below floor (see Store.claimThenPut).
const CLAIM = `
local function claim(first, last, floor)
  local next = tonumber(redis.call('HGET', KEYS[1], ARGV[2]) or '1')
  local ids = {}
  for i = first, last do
    local id = redis.call('HGET', KEYS[1], ARGV[i])
    if id then
      ids[#ids + 1] = tonumber(id)
    else
      if floor and next < floor then next = floor end
      redis.call('HSET', KEYS[1], ARGV[i], tostring(next))
      ids[#ids + 1] = next
      next = next + 1
    end
  end
  redis.call('HSET', KEYS[1], ARGV[2], tostring(next))
  return ids
end
`

// ARGV: ttl, then field and value pairs.
const PUT_IF_ABSENT = `${PUT}
local out = put(2)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return out
`

// ARGV: ttl, counter field, claim fields.
const CLAIM_IDS = `${CLAIM}
local ids = claim(3, #ARGV)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return ids
`

// ARGV: ttl, counter field, n, n claim fields, the n numbers expected, then field and value
// pairs, written only when the claim gave the numbers expected: {ids, winners}, else {ids}.
const CLAIM_THEN_PUT = `${CLAIM}${PUT}
local n = tonumber(ARGV[3])
local ids = claim(4, 3 + n, tonumber(ARGV[4 + n]))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
for i = 1, n do
  if ids[i] ~= tonumber(ARGV[3 + n + i]) then return {ids} end
end
return {ids, put(4 + 2 * n)}
`

// ARGV: ttl, field, value. Overwrites: running it twice leaves the same state as once.
const SET_LATEST = `
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`

interface LembasCommands {
  lembasPutIfAbsent(
    key: string,
    ttl: number,
    ...fieldsAndValues: string[]
  ): Promise<(string | null)[]>
  lembasClaimIds(key: string, ttl: number, counter: string, ...fields: string[]): Promise<number[]>
  lembasClaimThenPut(
    key: string,
    ttl: number,
    counter: string,
    n: number,
    ...rest: (string | number)[]
  ): Promise<[number[], (string | null)[]] | [number[]]>
  lembasSetLatest(key: string, ttl: number, field: string, value: string): Promise<number>
}

export interface RedisStoreOptions {
  idleTtlMs: number
  /** A command without a reply after this long fails (it may still have run: writes are idempotent). */
  commandTimeoutMs?: number
  connectTimeoutMs?: number
}

/** Connects, and resolves only once Redis answers; rejects with store_unavailable otherwise. */
export async function openRedisStore(url: string, options: RedisStoreOptions): Promise<Store> {
  checkIdleTtl(options.idleTtlMs)
  const ttl = options.idleTtlMs
  const shown = redactUrl(url)
  const commandTimeout = options.commandTimeoutMs ?? 2000
  const connectTimeout = options.connectTimeoutMs ?? 5000
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    commandTimeout,
    connectTimeout,
    maxRetriesPerRequest: 1,
    // How long disconnect() waits for a dead socket to close; its timer holds the process open.
    disconnectTimeout: 200,
    // Keep trying forever, but never wait long: a restarted Redis is used again within ~1 s.
    retryStrategy: (times) => Math.min(100 * times, 1000) + Math.floor(Math.random() * 100),
  })
  client.defineCommand('lembasPutIfAbsent', { numberOfKeys: 1, lua: PUT_IF_ABSENT })
  client.defineCommand('lembasClaimIds', { numberOfKeys: 1, lua: CLAIM_IDS })
  client.defineCommand('lembasClaimThenPut', { numberOfKeys: 1, lua: CLAIM_THEN_PUT })
  client.defineCommand('lembasSetLatest', { numberOfKeys: 1, lua: SET_LATEST })
  const commands = client as unknown as LembasCommands

  // ioredis prints unhandled 'error' events; we keep the last one to explain later failures.
  let lastError: Error | undefined
  client.on('error', (err: Error) => {
    lastError = err
  })
  client.on('ready', () => {
    lastError = undefined
  })

  // Only the message: ioredis errors can carry the command's arguments (AUTH carries the password).
  const fail = (err: unknown, op: string): LembasError => {
    if (err instanceof LembasError) return err
    const message = err instanceof Error ? err.message : String(err)
    // The connection's own error (ECONNREFUSED, WRONGPASS) says more than "Connection is closed".
    const why =
      lastError && lastError.message !== message ? `${lastError.message} (${message})` : message
    return new LembasError('store_unavailable', `redis store ${shown}: ${op} failed: ${why}`)
  }

  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      client.connect(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${connectTimeout} ms`)),
          connectTimeout,
        )
      }),
    ])
  } catch (err) {
    client.disconnect()
    throw fail(err, 'connect')
  } finally {
    clearTimeout(timer)
  }

  let closed = false
  const run = async <T>(op: string, fn: () => Promise<T>): Promise<T> => {
    if (closed) throw closedError('redis')
    try {
      return await fn()
    } catch (err) {
      throw fail(err, op)
    }
  }

  /** The stored fields of a scope (kvField or latestField of the caller's keys). */
  const read = (op: string, scope: string, fields: string[]): Promise<(string | undefined)[]> => {
    const key = scopeKey(scope)
    return run(op, async () => {
      // Reading keeps the scope alive too; PEXPIRE is idempotent.
      const replies = await client
        .pipeline()
        .hmget(key, ...fields)
        .pexpire(key, ttl)
        .exec()
      const [hmget] = replies ?? []
      if (!hmget) throw new Error('empty pipeline reply')
      if (hmget[0]) throw hmget[0]
      return (hmget[1] as (string | null)[]).map((v) => v ?? undefined)
    })
  }

  const claim = async (scope: string, keys: readonly string[]): Promise<number[]> => {
    if (keys.length === 0) return []
    return run('claimIds', () =>
      commands.lembasClaimIds(scopeKey(scope), ttl, COUNTER_FIELD, ...keys.map(claimField)),
    )
  }

  return {
    kind: 'redis',
    async get(scope, keys) {
      if (closed) throw closedError('redis')
      checkKeys(scope, keys)
      if (keys.length === 0) return []
      return read('get', scope, keys.map(kvField))
    },
    async putIfAbsent(scope, entries) {
      if (closed) throw closedError('redis')
      checkEntries(scope, entries)
      if (entries.length === 0) return []
      const args = entries.flatMap(([k, v]) => [kvField(k), v])
      const won = await run('putIfAbsent', () =>
        commands.lembasPutIfAbsent(scopeKey(scope), ttl, ...args),
      )
      return entries.map(([, v], i) => won[i] ?? v)
    },
    async claimIds(scope, keys) {
      if (closed) throw closedError('redis')
      checkKeys(scope, keys)
      return claim(scope, keys)
    },
    async claimThenPut(scope, keys, expected, entries) {
      if (closed) throw closedError('redis')
      checkKeys(scope, keys)
      checkEntries(scope, entries)
      // Numbers of another count can never match: a claim alone.
      if (expected.length !== keys.length) return { ids: await claim(scope, keys) }
      const [ids, won] = await run('claimThenPut', () =>
        commands.lembasClaimThenPut(
          scopeKey(scope),
          ttl,
          COUNTER_FIELD,
          keys.length,
          ...keys.map(claimField),
          ...expected,
          ...entries.flatMap(([k, v]) => [kvField(k), v]),
        ),
      )
      if (!won) return { ids }
      return { ids, winners: entries.map(([, v], i) => won[i] ?? v) }
    },
    async setLatest(scope, key, value) {
      if (closed) throw closedError('redis')
      checkEntries(scope, [[key, value]])
      await run('setLatest', () =>
        commands.lembasSetLatest(scopeKey(scope), ttl, latestField(key), value),
      )
    },
    async getLatest(scope, key) {
      if (closed) throw closedError('redis')
      checkKeys(scope, [key])
      const [value] = await read('getLatest', scope, [latestField(key)])
      return value
    },
    async ping() {
      await run('ping', () => client.ping())
    },
    async close() {
      if (closed) return
      closed = true
      try {
        if (client.status === 'ready') await client.quit()
      } catch {
        // Already gone: disconnect below is all that is left to do.
      } finally {
        // After a clean QUIT the status is 'end'; disconnect() then would only leave a timer.
        if (client.status !== 'end') client.disconnect()
      }
    },
  }
}
