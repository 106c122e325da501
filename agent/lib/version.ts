/** The version of these sources; scripts/build-agent.ts reads it, and a build may stamp another (below). */
const AGENT_SOURCE_VERSION = '1.0.0'

/** Set by `bun build --define` in scripts/build-agent.ts --version (a release or a test's "next" build); absent when run from source. */
declare const GPUHQ_AGENT_BUILD_VERSION: string | undefined

/** The agent's own version, sent at enrolment and in every hello (the service refuses one below its MIN_AGENT_VERSION, default 1.0.0). */
export const AGENT_VERSION: string = typeof GPUHQ_AGENT_BUILD_VERSION === 'string' ? GPUHQ_AGENT_BUILD_VERSION : AGENT_SOURCE_VERSION

/** The command schema version this agent understands (a higher one is refused with unsupported_schema_version: docs/agent.md). */
export const COMMAND_SCHEMA_VERSION = 1

/** Exit codes the systemd unit knows about (install.sh). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  /** agent.restart and agent.update: a supervisor should start the agent again. */
  restart: 75,
  /** Not enrolled, credential revoked, agent too old: restarting cannot help (RestartPreventExitStatus). */
  config: 78,
} as const
