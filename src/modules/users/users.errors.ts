import { defineErrors } from '../../platform/domain-error'

/** What the profile and member operations refuse. */
export const UserErrors = defineErrors('users', {
  notAMember: { problem: 'forbidden', message: 'only members have a profile' },
  userNotFound: { problem: 'not_found', message: 'no such user' },
  badPreferences: { problem: 'validation_failed', message: 'the request did not pass validation' },
})
