import type { Upstream } from './client.js'

/** An upstream for the requests below a path: '/messages' covers '/messages/count_tokens'. */
export interface UpstreamRoute {
  readonly path: string
  readonly upstream: Upstream
}

/**
 * One upstream per API: requests below a route's path go to its upstream (Claude Code's
 * Messages API to Anthropic, Codex's Responses API to OpenAI), every other to `fallback` (chat
 * completions to a local server). Routes without their own upstream are simply not given.
 */
export function routedUpstream(fallback: Upstream, routes: readonly UpstreamRoute[]): Upstream {
  if (routes.length === 0) return fallback
  const all = [fallback, ...routes.map((route) => route.upstream)]
  const forPath = (path: string): Upstream =>
    routes.find(
      (route) =>
        path === route.path ||
        path.startsWith(route.path + '/') ||
        path.startsWith(route.path + '?'),
    )?.upstream ?? fallback
  return {
    send: (request) => forPath(request.path).send(request),
    mapError: (error, signal) => fallback.mapError(error, signal),
    forPath,
    describe: () => [
      ...routes.map((route) => ({ route: route.path, url: route.upstream.describe()[0]!.url })),
      { route: '*', url: fallback.describe()[0]!.url },
    ],
    close: async () => {
      await Promise.all(all.map((u) => u.close()))
    },
    destroy: async (reason) => {
      await Promise.all(all.map((u) => u.destroy(reason)))
    },
    stopped: AbortSignal.any(all.map((u) => u.stopped)),
  }
}
