/** The testing module's front door: test-only routes (TEST_CLOCK) and the stored clock offset. */
export { testingRoutes } from './testing.routes'
export { loadClockOffset, saveClockOffset } from './testing.service'
