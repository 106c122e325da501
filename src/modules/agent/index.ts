/** The agent module's front door: the enrolment and download routes, the agent's bearer resolver, the WebSocket endpoint. */
export { agentDownloadRoutes, agentRoutes } from './agent.routes'
export { resolveAgent } from './agent.service'
export { AGENT_WS_PATH, agentWebSocket, upgradeAgent, type AgentSocketData } from './agent.ws'
