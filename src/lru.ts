/**
 * Values by key, least recently used first, each with a weight (its estimated bytes): a lookup,
 * an update and an eviction each take constant time. A Map re-inserted on every use and evicted
 * from its front does not: V8 keeps a deleted entry's slot until it rebuilds the table, and each
 * eviction walks all those slots again (10–20 µs an eviction at tens of thousands of entries,
 * about a tenth of a small request's CPU once the proxy's store cache was full).
 */
export class Lru<V> {
  readonly #nodes = new Map<string, Node<V>>()
  /** The least recently used; `#newest` the most. */
  #oldest: Node<V> | undefined
  #newest: Node<V> | undefined
  #weight = 0

  /** The weights of the entries held, summed. */
  get weight(): number {
    return this.#weight
  }

  get size(): number {
    return this.#nodes.size
  }

  /** The value, now the most recently used. */
  get(key: string): V | undefined {
    const node = this.#nodes.get(key)
    if (!node) return undefined
    this.#unlink(node)
    this.#append(node)
    return node.value
  }

  /** The value, its place left as it was. */
  peek(key: string): V | undefined {
    return this.#nodes.get(key)?.value
  }

  /** Sets or replaces the value: the most recently used. */
  set(key: string, value: V, weight: number): void {
    const old = this.#nodes.get(key)
    if (old) this.#remove(old)
    const node: Node<V> = { key, value, weight, older: undefined, newer: undefined }
    this.#nodes.set(key, node)
    this.#append(node)
    this.#weight += weight
  }

  delete(key: string): boolean {
    const node = this.#nodes.get(key)
    if (node) this.#remove(node)
    return node !== undefined
  }

  /** The keys and values, least recently used first. */
  *entries(): Generator<readonly [string, V]> {
    for (let node = this.#oldest; node; node = node.newer) yield [node.key, node.value]
  }

  /** The values, least recently used first. */
  *values(): Generator<V> {
    for (let node = this.#oldest; node; node = node.newer) yield node.value
  }

  clear(): void {
    this.#nodes.clear()
    this.#oldest = this.#newest = undefined
    this.#weight = 0
  }

  /** Drops the least recently used until the weights fit in `maxWeight`; never `keep`. */
  evictTo(maxWeight: number, keep?: string): void {
    let node = this.#oldest
    while (node && this.#weight > maxWeight) {
      const next = node.newer
      if (node.key !== keep) this.#remove(node)
      node = next
    }
  }

  /** Drops the least recently used until at most `maxEntries` are left. */
  evictToSize(maxEntries: number): void {
    while (this.#oldest && this.#nodes.size > maxEntries) this.#remove(this.#oldest)
  }

  #remove(node: Node<V>): void {
    this.#nodes.delete(node.key)
    this.#unlink(node)
    this.#weight -= node.weight
  }

  #unlink(node: Node<V>): void {
    if (node.older) node.older.newer = node.newer
    else this.#oldest = node.newer
    if (node.newer) node.newer.older = node.older
    else this.#newest = node.older
    node.older = node.newer = undefined
  }

  #append(node: Node<V>): void {
    node.older = this.#newest
    if (this.#newest) this.#newest.newer = node
    else this.#oldest = node
    this.#newest = node
  }
}

interface Node<V> {
  readonly key: string
  readonly value: V
  readonly weight: number
  older: Node<V> | undefined
  newer: Node<V> | undefined
}
