import { defineErrors } from '../../platform/domain-error'

/** What the groups verbs refuse; src/platform/http.ts maps them to problem documents. */
export const GroupErrors = defineErrors('groups', {
  notFound: { problem: 'not_found', message: 'no such group' },
  nameTaken: { problem: 'conflict', message: 'a group of that name already exists' },
  notEmpty: { problem: 'conflict', message: 'the group still holds servers; move them out first' },
})
