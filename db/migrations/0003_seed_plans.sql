-- The plan catalogue of decisions.md. Prices: integer micro-USD per managed server per month;
-- NULL price = contract-priced; NULL servers_max = unlimited. The operator edits rows afterwards.
INSERT INTO `plans` (`code`, `label`, `price_micros_per_server_month`, `servers_max`, `features`, `upgrade_effective`, `downgrade_effective`, `position`, `updated_at`) VALUES
  ('free', 'Free', 0, 1, '[]', 'same_day', 'next_month', 1, 0),
  ('starter', 'Starter', 2000000, 10, '[]', 'same_day', 'next_month', 2, 0),
  ('pro', 'Pro', 4000000, NULL, '["strategy","ai_access"]', 'same_day', 'next_month', 3, 0),
  ('enterprise', 'Enterprise', NULL, NULL, '["strategy","ai_access"]', 'same_day', 'next_month', 4, 0);
