export {
  createUpstream,
  type Upstream,
  type UpstreamBody,
  type UpstreamOptions,
  type UpstreamRequest,
  type UpstreamResponse,
} from './client.js'
export { isAbortError, toAbortError } from './errors.js'
export { routedUpstream, type UpstreamRoute } from './routes.js'
