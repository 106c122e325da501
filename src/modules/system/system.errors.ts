import { defineErrors } from '../../platform/domain-error'

const E = defineErrors('system', {
  databaseGone: { problem: 'temporarily_unavailable', message: 'the database file is gone or was replaced; restart the service' },
  databaseUnreachable: { problem: 'temporarily_unavailable', message: 'the database is not reachable' },
  migrationsPending: { problem: 'temporarily_unavailable', message: 'database migrations are not applied yet' },
  problemTypeNotFound: { problem: 'not_found', message: 'no such problem type' },
})

/** A load balancer may ask again this soon. */
const RETRY_SECONDS = 5

/** Why the service is not ready, and the problem pages' one refusal. */
export const SystemErrors = {
  databaseGone: () => E.databaseGone(undefined, { retryAfterSeconds: RETRY_SECONDS }),
  databaseUnreachable: (cause: unknown) => E.databaseUnreachable(undefined, { retryAfterSeconds: RETRY_SECONDS, internal: cause }),
  migrationsPending: (n: number) => E.migrationsPending(`${n} database migrations are not applied yet`, { retryAfterSeconds: RETRY_SECONDS }),
  problemTypeNotFound: (code: string) => E.problemTypeNotFound(`no problem type ${code}`),
}
