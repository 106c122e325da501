import { defineErrors } from '../../platform/domain-error'

/** What the commands verbs refuse; src/platform/http.ts maps them to problem documents. */
export const CommandErrors = defineErrors('commands', {
  invalid: { problem: 'validation_failed', message: 'the command is not valid' },
  serverDecommissioned: { problem: 'conflict', message: 'the server is decommissioned' },
  onlineQueueFull: { problem: 'online_queue_full', message: 'the server has too many commands waiting for delivery' },
  offlineQueueFull: { problem: 'offline_queue_full', message: 'the server has too many commands waiting for delivery' },
  notFound: { problem: 'not_found', message: 'no such command' },
  logNotFound: { problem: 'not_found', message: 'no such log' },
  alreadyEnded: { problem: 'conflict', message: 'the command already ended' },
})
