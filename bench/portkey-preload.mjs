// Preloaded into the Portkey peer only: `node --import ./bench/portkey-preload.mjs …start-server.js`.
//
// @portkey-ai/gateway 1.15.2 on Node answers every streamed chat completion with
// {"status":"failure","message":"Something went wrong"} and logs `TypeError: immutable`: it builds
// its SSE Response from the upstream's fetch() Response, whose headers are immutable, and then
// appends x-portkey-* headers to them (Portkey-AI/gateway#1389, #1550). This gives Portkey, for
// SSE answers only, a copy of fetch's Response with mutable headers: one extra Response object
// per streamed request, and nothing else changed. Non-streamed requests are untouched.
const NativeResponse = globalThis.Response
const nativeFetch = globalThis.fetch
globalThis.fetch = async function fetch(input, init) {
  const response = await nativeFetch(input, init)
  const type = response.headers.get('content-type') ?? ''
  return type.startsWith('text/event-stream')
    ? new NativeResponse(response.body, response)
    : response
}
