/** The testing module's front door: test-only routes (TEST_CLOCK), the stored clock offset, and the public address the service last started with. */
export { testingRoutes } from './testing.routes'
export { loadClockOffset, loadPublicUrl, saveClockOffset, savePublicUrl } from './testing.service'
