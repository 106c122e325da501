/**
 * A small typed in-process event bus: how one module reacts to what another did without importing
 * it or keeping module-level state. The composition root (src/reactions.ts, called by buildDeps)
 * registers every reaction, so a process that only runs jobs reacts exactly as one serving HTTP.
 *
 * Semantics, chosen for money: `emit` runs every handler in registration order, one after the
 * other (each awaited), and resolves when the last has finished. An event that carries a transaction (`tx`) is emitted inside it, so what the
 * handlers write commits or rolls back with the change that caused it (a paid upgrade is applied
 * exactly when its credit is booked). A handler that throws aborts the emitter, and with it that
 * transaction; nothing is swallowed here. Side effects outside the database belong after commit.
 */
type EventHandler<P> = (payload: P) => Promise<void> | void

export interface EventBus<Events extends Record<string, unknown>> {
  /** Registers a handler; returns a function that removes it. */
  on<K extends keyof Events>(name: K, handler: EventHandler<Events[K]>): () => void
  /** Runs every handler of `name`, in registration order, each awaited before the next. */
  emit<K extends keyof Events>(name: K, payload: Events[K]): Promise<void>
}

export function createEventBus<Events extends Record<string, unknown>>(): EventBus<Events> {
  const handlers = new Map<keyof Events, EventHandler<never>[]>()
  return {
    on(name, handler) {
      const list = handlers.get(name) ?? []
      list.push(handler as EventHandler<never>)
      handlers.set(name, list)
      return () => {
        const i = list.indexOf(handler as EventHandler<never>)
        if (i >= 0) list.splice(i, 1)
      }
    },
    async emit(name, payload) {
      // A copy, so a handler that registers or removes another does not change this emit.
      for (const handler of [...(handlers.get(name) ?? [])]) await (handler as EventHandler<typeof payload>)(payload)
    },
  }
}
