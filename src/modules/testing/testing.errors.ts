import { defineErrors, invalidField } from '../../platform/domain-error'

const E = defineErrors('testing', {
  probeNotFound: { problem: 'not_found', message: 'no such probe' },
  jobNotFound: { problem: 'not_found', message: 'no such job' },
  jobBusy: { problem: 'conflict', message: 'the job is running in another process; retry shortly' },
  rateLimited: { problem: 'rate_limited', message: 'rate limit exceeded' },
})

/** What the test-only operations refuse. */
export const TestingErrors = {
  probeNotFound: () => E.probeNotFound(),
  jobNotFound: (job: string, known: string[]) => E.jobNotFound(`no job ${job}; known: ${known.join(', ')}`),
  jobBusy: (job: string) => E.jobBusy(`${job} is running in another process; retry shortly`),
  rateLimited: (seconds: number) => E.rateLimited(`rate limit exceeded; retry in ${seconds} s`, { retryAfterSeconds: seconds }),
  badNow: () => invalidField('testing', '/now', 'format', 'now must be an RFC 3339 timestamp'),
  clockBackwards: () => invalidField('testing', '/now', 'in_the_past', 'the test clock only moves forward'),
}
