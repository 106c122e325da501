/**
 * The wire protocols gpuhq shares with programs that are not the service: today the agent protocol
 * (agent.ts). Imported as `#protocol` (package.json "imports"), which resolves to this file in the
 * repository and to the bundled protocol.js beside an installed agent.
 */
export * from './agent'
