import type { FieldError, ProblemCode } from './problem'

/**
 * What a service says went wrong, in its own terms and with no HTTP in it. Each module declares its
 * errors in `<feature>.errors.ts` with `defineErrors`; src/platform/http.ts turns any DomainError
 * into a problem document in one place (status from the problem family, headers from the facts).
 *
 * - `code` is stable and module-qualified (`commands.offline_queue_full`): logs and tests name it.
 * - `problem` is the family on the wire, one of the specification's closed set of codes.
 * - `facts` are what the HTTP layer may turn into headers or a status variant, never the reverse.
 */
export type DomainFacts = {
  /** Offending fields as JSON Pointers with short codes (422 validation_failed). */
  fields?: FieldError[]
  /** The client may retry after this many seconds (becomes Retry-After). */
  retryAfterSeconds?: number
  /** The If-Match version did not match (412 instead of 409 for `conflict`). */
  preconditionFailed?: boolean
  /** The current version of the resource, for the client's next If-Match (becomes ETag). */
  currentVersion?: string
  /** Never shown to the client; logged with the request id. */
  internal?: unknown
}

export class DomainError extends Error {
  constructor(
    readonly code: string,
    readonly problem: ProblemCode,
    message: string,
    readonly facts: DomainFacts = {},
  ) {
    super(message)
    this.name = 'DomainError'
  }
}

type Spec = { problem: ProblemCode; message: string }
type Factory = (message?: string, facts?: DomainFacts) => DomainError

/**
 * A module's error catalogue: `export const CommandErrors = defineErrors('commands', { serverNotFound:
 * { problem: 'not_found', message: 'no such server' } })`, then `throw CommandErrors.serverNotFound()`.
 * The stable code is the module name and the key in snake case.
 */
export function defineErrors<const T extends Record<string, Spec>>(module: string, specs: T): { [K in keyof T]: Factory } {
  const out = {} as Record<string, Factory>
  for (const [key, spec] of Object.entries(specs)) {
    const code = `${module}.${key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`
    out[key] = (message, facts) => new DomainError(code, spec.problem, message ?? spec.message, facts)
  }
  return out as { [K in keyof T]: Factory }
}

/** A field-level validation error raised by a service (a rule the schema cannot express). */
export function invalidField(module: string, path: string, fieldCode: string, message: string): DomainError {
  return new DomainError(`${module}.invalid_${fieldCode}`, 'validation_failed', message, { fields: [{ path, code: fieldCode }] })
}
