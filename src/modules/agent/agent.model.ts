import { Type } from '@sinclair/typebox'
import type { HostFactsBody, ServiceFrame } from '#protocol'
import { Uuid } from '../../platform/schemas'

/** The enrolment and HTTPS hello bodies are the protocol's (protocol/agent.ts). */
export { HelloBody, RegisterBody } from '#protocol'

export const Registered = Type.Object({
  server_id: Uuid(),
  agent_token: Type.String({ description: 'gpuhq_agt_… credential, shown once; present it as Authorization: Bearer' }),
  ws_url: Type.String(),
  heartbeat_interval_s: Type.Integer(),
  telemetry_interval_s: Type.Integer(),
})
export type HostFactsInput = HostFactsBody

/** Frames an agent sends and the service answers with: the protocol's own schemas (protocol/agent.ts), checked by its compiled checkers in agent.ws.ts. */
export type OutgoingFrame = ServiceFrame<'welcome' | 'error'>
