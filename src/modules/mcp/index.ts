/** AI-assistant access: the token, OAuth for clients, and the MCP gateway (docs/ai-access.md). */
export { authenticateMcp } from './caller'
export { mcpRoutes } from './mcp.routes'
