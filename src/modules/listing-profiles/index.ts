/** The listing-profiles module's front door: group listing profiles and their routes (docs/marketplaces.md "Listing profiles"). */
export { listingProfilesRoutes } from './listing-profiles.routes'
export { applyProfilesToNewMembers } from './listing-profiles.service'
