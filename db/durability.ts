import type { Database } from 'bun:sqlite'
import { open } from 'node:fs/promises'
import { dirname } from 'node:path'

/**
 * Group commit for SQLite in WAL mode (docs/operations.md "Durability").
 *
 * The service's connection runs `synchronous=NORMAL`: a commit appends its pages to the `-wal` file
 * and is visible at once, but is not fsynced. Nothing leaves the process on the strength of a write
 * (an HTTP answer, a request to a marketplace, a payment provider, a chat or mail server) until
 * `barrier()` has resolved: it fsyncs the WAL file from libuv's thread pool, off the event loop, and
 * one fsync covers every commit made before it began, whichever request made them. Under load many
 * answers share one fsync instead of paying one each on the event loop, as `synchronous=FULL` did.
 *
 * Why one fsync of the WAL is enough: the WAL is one append-only file (rewound from its start only
 * after a checkpoint, which SQLite fsyncs itself), and recovery keeps only the frames up to the first
 * one whose cumulative checksum fails, so a power loss leaves a prefix of the commits: never a later
 * commit without an earlier one, never part of one. A process crash (kill -9) loses nothing
 * committed at all: the frames are in the kernel's page cache.
 *
 * What is not yet flushed is flushed at most FLUSH_IDLE_MS later anyway (jobs and agent frames,
 * which acknowledge nothing to anyone, lose at most that much to a power loss).
 */
const FLUSH_IDLE_MS = 1000

type DurabilityStats = { flushes: number; flushedChanges: number; pendingChanges: number }

export interface Durability {
  /** Resolves once every commit made on this connection before the call is on disk. */
  barrier(): Promise<void>
  /** True while commits are waiting for their fsync. */
  pending(): boolean
  stats(): DurabilityStats
  stop(): void
}

/** For a connection that fsyncs each commit itself (`synchronous=FULL`, `:memory:`): nothing to wait for. */
export const fsyncedByCommit: Durability = {
  barrier: () => Promise.resolve(),
  pending: () => false,
  stats: () => ({ flushes: 0, flushedChanges: 0, pendingChanges: 0 }),
  stop: () => {},
}

/** Switches `sqlite` (a WAL database on a file) to group commit and returns its barrier. */
export function groupCommit(sqlite: Database, path: string): Durability {
  sqlite.exec('PRAGMA synchronous = NORMAL')
  return new WalGroupCommit(sqlite, path)
}

class WalGroupCommit implements Durability {
  readonly #changes: () => number
  readonly #wal: string
  /** total_changes() covered by the last completed fsync. */
  #flushed: number
  /** The flush under way and the total_changes() it covers. */
  #current: { upTo: number; done: Promise<void> } | null = null
  /** The flush that starts when the current one ends (it covers whatever was committed by then). */
  #next: Promise<void> | null = null
  #flushes = 0
  #dirSynced = false
  #timer: ReturnType<typeof setInterval>

  constructor(sqlite: Database, path: string) {
    const query = sqlite.query<{ n: number }, []>('SELECT total_changes() AS n')
    // A closed connection commits nothing more, and closing it checkpointed what it had (synced).
    this.#changes = () => {
      try {
        return query.get()!.n
      } catch {
        return this.#flushed
      }
    }
    this.#wal = `${path}-wal`
    this.#flushed = this.#changes()
    this.#timer = setInterval(() => {
      if (this.pending()) this.barrier().catch(() => {})
    }, FLUSH_IDLE_MS)
    this.#timer.unref()
  }

  pending(): boolean {
    return this.#changes() > this.#flushed
  }

  stats(): DurabilityStats {
    const total = this.#changes()
    return { flushes: this.#flushes, flushedChanges: this.#flushed, pendingChanges: total - this.#flushed }
  }

  barrier(): Promise<void> {
    const mark = this.#changes()
    if (mark <= this.#flushed) return Promise.resolve()
    // A flush under way that began after our commits covers them; one that began before does not.
    if (this.#current && this.#current.upTo >= mark) return this.#current.done
    if (!this.#current) return this.#start()
    this.#next ??= this.#current.done.then(
      () => this.#afterCurrent(),
      () => this.#afterCurrent(),
    )
    return this.#next
  }

  stop(): void {
    clearInterval(this.#timer)
  }

  #afterCurrent(): Promise<void> {
    this.#next = null
    return this.#current ? this.#current.done : this.#start()
  }

  #start(): Promise<void> {
    const upTo = this.#changes()
    const done = this.#fsync().then(
      () => {
        this.#flushes++
        if (upTo > this.#flushed) this.#flushed = upTo
        this.#current = null
      },
      (error) => {
        this.#current = null
        throw error
      },
    )
    this.#current = { upTo, done }
    return done
  }

  async #fsync(): Promise<void> {
    let file: Awaited<ReturnType<typeof open>>
    try {
      file = await open(this.#wal, 'r')
    } catch (e) {
      // No WAL file: the last connection closed and checkpointed it into the database, synced.
      if ((e as { code?: string }).code === 'ENOENT') return
      throw e
    }
    try {
      await file.datasync()
    } finally {
      await file.close()
    }
    if (!this.#dirSynced) {
      // The -wal file's own directory entry, once: a new file is durable only when its name is.
      const dir = await open(dirname(this.#wal), 'r')
      try {
        await dir.sync()
      } finally {
        await dir.close()
      }
      this.#dirSynced = true
    }
  }
}
