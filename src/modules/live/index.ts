/**
 * The live module's front door: GET /events/stream, the producers that fill its buffer (reactions,
 * wired in src/reactions.ts), the live.prune job, and the hub the server closes on shutdown.
 */
export { liveRoutes } from './live.routes'
export {
  liveFromAlert,
  liveFromAlerts,
  liveFromCommand,
  liveFromRental,
  liveFromServerEvent,
  liveFromServerEvents,
  liveFromTopup,
  liveFromTopupNotCredited,
} from './live.reactions'
export { pruneLiveEvents } from './live.prune'
export { liveHub } from './live.hub'
export { liveEventTypes } from './live.catalogue'
