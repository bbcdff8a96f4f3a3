/** Makes whitespace visible in failure messages: tabs →, CR ␍, line ends ⏎. */
export function visible(line: string | undefined): string {
  if (line === undefined) return '(no line)'
  return line.replaceAll('\t', '→').replaceAll('\r', '␍') + '⏎'
}

/** The first line where two texts differ, shown side by side; undefined when equal. */
export function firstDifference(expected: string, actual: string): string | undefined {
  if (expected === actual) return undefined
  const e = expected.split('\n')
  const a = actual.split('\n')
  for (let i = 0; i < Math.max(e.length, a.length); i++) {
    if (e[i] !== a[i]) {
      return `first difference at line ${i + 1}:\n    expected: ${visible(e[i])}\n    actual:   ${visible(a[i])}`
    }
  }
  return 'texts differ only in their line ends'
}
