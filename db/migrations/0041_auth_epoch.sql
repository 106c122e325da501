CREATE TABLE `auth_epoch` (
	`id` integer PRIMARY KEY NOT NULL,
	`n` integer NOT NULL
) STRICT;
--> statement-breakpoint
-- What a verified bearer token's caller is made of (src/modules/tokens): when any of it changes, the
-- counter moves and every cached verification is read again from these tables.
INSERT INTO `auth_epoch` (`id`, `n`) VALUES (1, 0);
--> statement-breakpoint
CREATE TRIGGER `auth_epoch_token_changed` AFTER UPDATE ON `access_tokens`
WHEN OLD.`token_hash` IS NOT NEW.`token_hash` OR OLD.`tenant_id` IS NOT NEW.`tenant_id` OR OLD.`user_id` IS NOT NEW.`user_id`
  OR OLD.`scopes` IS NOT NEW.`scopes` OR OLD.`server_allowlist` IS NOT NEW.`server_allowlist`
  OR OLD.`expires_at` IS NOT NEW.`expires_at` OR OLD.`revoked_at` IS NOT NEW.`revoked_at`
BEGIN UPDATE `auth_epoch` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `auth_epoch_token_deleted` AFTER DELETE ON `access_tokens`
BEGIN UPDATE `auth_epoch` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `auth_epoch_user_changed` AFTER UPDATE ON `users`
WHEN OLD.`tenant_id` IS NOT NEW.`tenant_id` OR OLD.`role` IS NOT NEW.`role`
BEGIN UPDATE `auth_epoch` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `auth_epoch_user_deleted` AFTER DELETE ON `users`
BEGIN UPDATE `auth_epoch` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `auth_epoch_tenant_changed` AFTER UPDATE ON `tenants`
WHEN OLD.`plan_code` IS NOT NEW.`plan_code` OR OLD.`account_state` IS NOT NEW.`account_state`
BEGIN UPDATE `auth_epoch` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `auth_epoch_tenant_deleted` AFTER DELETE ON `tenants`
BEGIN UPDATE `auth_epoch` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `auth_epoch_session_changed` AFTER UPDATE ON `sessions`
WHEN OLD.`token_hash` IS NOT NEW.`token_hash` OR OLD.`user_id` IS NOT NEW.`user_id`
  OR OLD.`absolute_expires_at` IS NOT NEW.`absolute_expires_at` OR NEW.`idle_expires_at` < OLD.`idle_expires_at`
BEGIN UPDATE `auth_epoch` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `auth_epoch_session_deleted` AFTER DELETE ON `sessions`
BEGIN UPDATE `auth_epoch` SET `n` = `n` + 1 WHERE `id` = 1; END;
