/** The tokens module's front door: personal access tokens and agent init tokens. */
export { assertRoomForServer, claimInitToken } from './init-tokens.service'
export { revokeSiblingInitTokens, setInitTokenServer } from './tokens.repository'
export { keptPat, resolvePat } from './tokens.service'
export { tokensRoutes } from './tokens.routes'
