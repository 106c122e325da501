import { defineErrors } from '../../platform/domain-error'

/** What the listing-profile verbs refuse; src/platform/http.ts maps them to problem documents. */
export const ListingProfileErrors = defineErrors('listing_profiles', {
  notFound: { problem: 'not_found', message: 'no such listing profile' },
  groupNotFound: { problem: 'not_found', message: 'no such group' },
  taken: { problem: 'conflict', message: 'the group already has a listing profile on that marketplace' },
})
