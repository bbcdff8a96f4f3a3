import xxhash from 'xxhash-wasm'

/**
 * The digest that tells a request's bytes from the remembered ones: 64-bit xxHash, about five
 * times faster than SHA-256 here (0.11 against 0.59 ms a megabyte), paid on every byte of
 * every request. It checks a client's own resent history against what the same credentials
 * sent before (the fast path's states are kept per tenant), so an accidental collision
 * (1 in 2^64) is the only risk, and it would cost that client alone.
 */
const { create64 } = await xxhash()

/**
 * Bytes are copied into the hash's WebAssembly memory to be digested, and that memory only
 * grows: they go in slices, so it stays at one slice whatever the body's size.
 */
const SLICE = 64 * 1024

/** A digest over bytes fed in order; `digest()` may be read at any point and fed on after. */
export interface RunningDigest {
  update(bytes: Uint8Array): RunningDigest
  digest(): Buffer
}

export function runningDigest(): RunningDigest {
  const hash = create64()
  const running: RunningDigest = {
    update(bytes) {
      for (let at = 0; at < bytes.length; at += SLICE) hash.update(bytes.subarray(at, at + SLICE))
      return running
    },
    digest: () => digestBytes(hash.digest()),
  }
  return running
}

function digestBytes(value: bigint): Buffer {
  const out = Buffer.allocUnsafe(8)
  out.writeBigUInt64BE(value)
  return out
}
