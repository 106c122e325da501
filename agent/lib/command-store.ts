import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic0600 } from './files'

/**
 * The ids of finished commands and their finished frames, kept on disk so a command re-delivered
 * after a reconnect, an agent restart or a reboot is answered again instead of run again
 * (a re-delivered `reboot` must not reboot twice).
 */
export type FinishedFrame = { type: 'command.finished'; command_id: string; status: 'succeeded' | 'failed'; result?: unknown; error?: unknown }

const KEEP = 1000

export class FinishedCommands {
  private readonly byId = new Map<string, FinishedFrame>()
  private readonly path: string | null

  constructor(stateDir: string | null) {
    this.path = stateDir ? join(stateDir, 'commands.json') : null
    if (this.path && existsSync(this.path)) {
      try {
        const data = JSON.parse(readFileSync(this.path, 'utf8')) as { finished?: FinishedFrame[] }
        for (const f of data.finished ?? []) if (typeof f?.command_id === 'string') this.byId.set(f.command_id, f)
      } catch {
        // A damaged file loses the memory of old commands, never the agent: start empty.
      }
    }
  }

  get(id: string): FinishedFrame | undefined {
    return this.byId.get(id)
  }

  /** Records synchronously (before any after-finish action such as a reboot runs). */
  add(frame: FinishedFrame): void {
    this.byId.delete(frame.command_id)
    this.byId.set(frame.command_id, frame)
    while (this.byId.size > KEEP) this.byId.delete(this.byId.keys().next().value!)
    if (this.path) writeFileAtomic0600(this.path, JSON.stringify({ finished: [...this.byId.values()] }) + '\n')
  }
}
