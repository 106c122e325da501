import { defineErrors, invalidField } from '../../platform/domain-error'

/** What opening a live stream refuses; src/platform/http.ts maps them to problem documents. */
export const LiveErrors = {
  ...defineErrors('live', {
    tooManyStreams: { problem: 'rate_limited', message: 'the tenant has as many live streams open as allowed; close one or retry later' },
  }),
  badLastEventId: (pointer: string) => invalidField('live', pointer, 'pattern', 'Last-Event-ID must be the decimal id of an event this stream sent'),
}
