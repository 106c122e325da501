CREATE TABLE "auth_epoch" (
	"id" bigint PRIMARY KEY NOT NULL,
	"n" bigint NOT NULL
);

--> statement-breakpoint
-- What a verified bearer token's caller is made of (src/modules/tokens; SQLite migration 0041): when
-- any of it changes, the counter moves and every cached verification is read again from these tables.
INSERT INTO auth_epoch (id, n) VALUES (1, 0);
--> statement-breakpoint
CREATE FUNCTION gpuhq_auth_epoch_bump() RETURNS trigger
  LANGUAGE plpgsql AS $$ BEGIN UPDATE auth_epoch SET n = n + 1 WHERE id = 1; RETURN NULL; END $$;
--> statement-breakpoint
CREATE TRIGGER auth_epoch_token_changed AFTER UPDATE ON access_tokens FOR EACH ROW
  WHEN (OLD.token_hash IS DISTINCT FROM NEW.token_hash OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.user_id IS DISTINCT FROM NEW.user_id
    OR OLD.scopes IS DISTINCT FROM NEW.scopes OR OLD.server_allowlist IS DISTINCT FROM NEW.server_allowlist
    OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.revoked_at IS DISTINCT FROM NEW.revoked_at)
  EXECUTE FUNCTION gpuhq_auth_epoch_bump();
--> statement-breakpoint
CREATE TRIGGER auth_epoch_token_deleted AFTER DELETE ON access_tokens FOR EACH ROW EXECUTE FUNCTION gpuhq_auth_epoch_bump();
--> statement-breakpoint
CREATE TRIGGER auth_epoch_user_changed AFTER UPDATE ON users FOR EACH ROW
  WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.role IS DISTINCT FROM NEW.role)
  EXECUTE FUNCTION gpuhq_auth_epoch_bump();
--> statement-breakpoint
CREATE TRIGGER auth_epoch_user_deleted AFTER DELETE ON users FOR EACH ROW EXECUTE FUNCTION gpuhq_auth_epoch_bump();
--> statement-breakpoint
CREATE TRIGGER auth_epoch_tenant_changed AFTER UPDATE ON tenants FOR EACH ROW
  WHEN (OLD.plan_code IS DISTINCT FROM NEW.plan_code OR OLD.account_state IS DISTINCT FROM NEW.account_state)
  EXECUTE FUNCTION gpuhq_auth_epoch_bump();
--> statement-breakpoint
CREATE TRIGGER auth_epoch_tenant_deleted AFTER DELETE ON tenants FOR EACH ROW EXECUTE FUNCTION gpuhq_auth_epoch_bump();
--> statement-breakpoint
CREATE TRIGGER auth_epoch_session_changed AFTER UPDATE ON sessions FOR EACH ROW
  WHEN (OLD.token_hash IS DISTINCT FROM NEW.token_hash OR OLD.user_id IS DISTINCT FROM NEW.user_id
    OR OLD.absolute_expires_at IS DISTINCT FROM NEW.absolute_expires_at OR NEW.idle_expires_at < OLD.idle_expires_at)
  EXECUTE FUNCTION gpuhq_auth_epoch_bump();
--> statement-breakpoint
CREATE TRIGGER auth_epoch_session_deleted AFTER DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION gpuhq_auth_epoch_bump();
