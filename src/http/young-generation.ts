/**
 * Caps V8's young generation at `semiSpaceMb` a semi-space (`--semi-space-mb`; 0 leaves V8's
 * own size, and so does a `--max-semi-space-size` given to node, on its command line or in
 * NODE_OPTIONS, which is the user's choice already).
 *
 * Why: Node 24 and 26 let the young generation grow to 128 and 64 MB before they collect it
 * (Node 20: 32 MB, 16 a semi-space); 64 sessions of 1 MB starting together peaked about 40 MB
 * higher on Node 26 for it, with the same latency and throughput capped (README, Performance).
 * V8 sizes it when the process starts: `v8.setFlagsFromString` later leaves it as it was. So the
 * process replaces itself, once, before it opens anything, by the same node with the flag
 * (`process.execve`: the same pid, stdio and environment). Node 20 has no `process.execve`, and
 * its young generation is already 16 MB a semi-space: nothing to do there.
 * Returns whether it replaced itself (it does not return then).
 */
export function capYoungGeneration(
  semiSpaceMb: number,
  proc: Pick<NodeJS.Process, 'execArgv' | 'argv' | 'env' | 'execPath'> & {
    execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never
  } = process,
): boolean {
  if (semiSpaceMb <= 0 || typeof proc.execve !== 'function') return false
  const given = /(^|\s)--max[-_]semi[-_]space[-_]size\b/
  if (proc.execArgv.some((arg) => given.test(arg)) || given.test(proc.env.NODE_OPTIONS ?? ''))
    return false
  const flag = `--max-semi-space-size=${semiSpaceMb}`
  try {
    proc.execve(
      proc.execPath,
      [proc.execPath, flag, ...proc.execArgv, ...proc.argv.slice(1)],
      proc.env,
    )
  } catch {
    // Refused (a node it may not run again, a sandbox): it goes on with V8's own size.
    return false
  }
  return true
}
