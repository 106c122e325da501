import { perDeps } from '../../platform/context'

/**
 * The live agent sessions of this process, by server: the one registry the WebSocket handler fills
 * and commands, decommissioning and re-enrolment push through. It lives in fleet, the lowest module
 * that needs it, so agent → commands → fleet stays one direction; it knows a session only as
 * something that sends text and closes.
 */
export type LiveSession = { send(text: string): unknown; close(code: number, reason: string): void }

class AgentSessions {
  readonly #sockets = new Map<string, LiveSession>()

  /** Makes `session` the server's live one; answers the session it replaced, if any. */
  open(serverId: string, session: LiveSession): LiveSession | undefined {
    const old = this.#sockets.get(serverId)
    this.#sockets.set(serverId, session)
    return old === session ? undefined : old
  }

  /** Forgets the session if it is still the server's live one; true when it was. */
  release(serverId: string, session: LiveSession): boolean {
    if (this.#sockets.get(serverId) !== session) return false
    this.#sockets.delete(serverId)
    return true
  }

  isLive(serverId: string): boolean {
    return this.#sockets.has(serverId)
  }

  /** Closes every live session (the service is stopping). */
  closeAll(code: number, reason: string): void {
    for (const session of [...this.#sockets.values()]) session.close(code, reason)
  }

  serverIds(): string[] {
    return [...this.#sockets.keys()]
  }

  /**
   * Closes the live session of a server (credential replaced, decommissioned). The entry stays
   * until the socket's close handler runs, so that handler still sees it as the live session and
   * takes the server offline at once.
   */
  close(serverId: string, code: number, reason: string): void {
    this.#sockets.get(serverId)?.close(code, reason)
  }

  send(serverId: string, frame: object): boolean {
    const ws = this.#sockets.get(serverId)
    if (!ws) return false
    ws.send(JSON.stringify(frame))
    return true
  }
}

export const agentSessions = perDeps(() => new AgentSessions())
