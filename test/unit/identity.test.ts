import assert from 'node:assert/strict'
import { test } from 'node:test'
import { shortHash, tenantOf } from '../../src/session/identity.js'

const tenant = (headers: Record<string, string>) => tenantOf(new Headers(headers))

test('a tenant is every credential header with its name; Authorization alone as it always was', () => {
  // Sessions stored before keep their tenant: an Authorization header alone hashes its value.
  const alone = tenant({ authorization: 'Bearer k' })
  assert.equal(alone, 't' + shortHash('Bearer k'))
  const all = [
    alone,
    tenant({ 'x-api-key': 'Bearer k' }),
    tenant({ authorization: 'Bearer k', 'x-api-key': 'a' }),
    tenant({ authorization: 'Bearer k', 'x-api-key': 'b' }),
    tenant({ authorization: 'Bearer k', 'api-key': 'a' }),
    tenant({}),
  ]
  assert.equal(new Set(all).size, all.length, all.join(' '))
  assert.equal(tenant({}), 'anonymous')
})
