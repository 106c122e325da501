/** The notifications module's front door: settings and channels (GET/PUT /notifications/settings, email connect). */
export { notificationsRoutes } from './notifications.routes'
export { pollChatLinks } from './chat-link.service'
export { dispatchNotifications } from './outbox.service'
export {
  fromAccountState,
  fromLowBalance,
  fromOfferPublished,
  fromPayoutGap,
  fromPlanRefusal,
  fromServerEvent,
  fromServerEvents,
  fromTopup,
  fromTopupNotCredited,
} from './producers'
export { TEMPERATURE_MARKS, watchTemperatures } from './temperature'
export { sendWeeklyReports } from './weekly'
// What alerts read: the notifications one condition produced (by group key and time), and their titles.
export { notificationsInGroups, notificationsOfGroupKeys, notificationSummaries, type NotificationSummary } from './outbox.repository'
